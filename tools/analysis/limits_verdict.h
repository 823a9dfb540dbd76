// The memory limits of a CI gate (docs/check.md) and their verdict on a set of processes: which
// limits broke, or what held, with the highest figures and where they were. Figures come from
// summary.json (or the summary rebuilt from the trace of a killed process), never from a replay: a
// gate reads in milliseconds. The command line sets the limits and prints the verdict
// (tools/gpumemprof/check_limits.h, for `check` and `run`); `diff` evaluates its growth limit here
// too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "event.h"
#include "job_directory.h"

namespace gmp::analysis {

struct Limits {
  std::optional<uint64_t> max_peak;         // per device: the driver level's allocated peak
  std::optional<uint64_t> max_reserved;     // per device: the driver level's reserved peak
  std::optional<uint64_t> max_leak;         // per process: summary.json's live_at_exit bytes
  std::optional<uint64_t> max_graph_memory; // per device: graph_memory_peak() (docs/check.md)
  bool no_oom = false;                      // per process: no out-of-memory failure at all
  // --max-category NAME=SIZE, per device: the category's own peak (docs/check.md). The only limit
  // read from a replay of the trace rather than from summary.json: categories are decided with
  // hindsight (tensor_categories.h).
  std::map<TensorCategory, uint64_t> max_category;
  std::string baseline_path;                // --baseline: a run directory or a job root
  std::optional<double> max_growth;         // percent, per device: allocated peak against the baseline's
  std::vector<reader::JobMember> baseline;  // read by the command's prepare_limits()
  const char* growth_option = "--max-growth";  // as messages name it: diff's is --fail-if-peak-grows

  bool any() const {
    return max_peak || max_reserved || max_leak || max_graph_memory || no_oom || max_growth || !max_category.empty();
  }
};

// What a device's CUDA graphs held at most: the graph memory pool's reserved peak (the driver's
// high watermark) plus the reserved peaks of PyTorch's private pools (torch.cuda.graph, CUDA graph
// trees), which are kept until their graphs go, so their peaks coincide.
uint64_t graph_memory_peak(const DeviceStats& d);

// What the limits found on a set of processes: notes (a process whose figures were rebuilt from its
// trace), then either one line per broken limit, or the one line saying what held, with the highest
// figures and where they were. Lines without the "gpumemprof COMMAND: " lead.
struct LimitsVerdict {
  std::vector<std::string> notes;
  std::vector<std::string> broken;
  std::string passed;  // when `broken` is empty
};

// Checks `limits` on `runs` (every one opened; `where` names them in the passing line). nullopt with
// `error` when a process has no counterpart in limits.baseline: a baseline that does not match is
// unreadable input, not a regression.
std::optional<LimitsVerdict> evaluate_limits(const std::vector<reader::JobMember>& runs, const Limits& limits,
                                             const std::string& where, std::string& error);

}  // namespace gmp::analysis
