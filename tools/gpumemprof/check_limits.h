// The memory limits of a CI gate (docs/check.md): parsed from the command line and checked against
// a run directory or a job root, once for `gpumemprof check` and `gpumemprof run`, so that both
// accept the same options and print the same lines. Figures come from summary.json (or the summary
// rebuilt from the trace of a killed process), never from a replay: a gate reads in milliseconds.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "job_directory.h"

namespace gmp::tool {

struct Limits {
  std::optional<uint64_t> max_peak;         // per device: the driver level's allocated peak
  std::optional<uint64_t> max_reserved;     // per device: the driver level's reserved peak
  std::optional<uint64_t> max_leak;         // per process: summary.json's live_at_exit bytes
  std::optional<uint64_t> max_graph_memory; // per device: graph_memory_peak() (docs/check.md)
  bool no_oom = false;                      // per process: no out-of-memory failure at all
  std::string baseline_path;                // --baseline: a run directory or a job root
  std::optional<double> max_growth;         // percent, per device: allocated peak against the baseline's
  std::vector<reader::JobMember> baseline;  // read by prepare_limits()
  const char* growth_option = "--max-growth";  // as messages name it: diff's is --fail-if-peak-grows

  bool any() const { return max_peak || max_reserved || max_leak || max_graph_memory || no_oom || max_growth; }
};

// What a device's CUDA graphs held at most: the graph memory pool's reserved peak (the driver's
// high watermark) plus the reserved peaks of PyTorch's private pools (torch.cuda.graph, CUDA graph
// trees), which are kept until their graphs go, so their peaks coincide.
uint64_t graph_memory_peak(const DeviceStats& d);

enum class LimitArg {
  Other,    // argv[i] is not a limit option
  Taken,    // it was, and is in `limits` (i is past its value)
  Refused,  // it was, with a missing or bad value: one line printed on stderr
};
// argv[i] as "--name value" or "--name=value" of a limit option.
LimitArg take_limit_arg(const char* command, int argc, char** argv, int& i, Limits& limits);

// The growth limit's value at argv[i] (a percentage: 10, 2.5%) into limits.max_growth; false
// after one line on stderr naming limits.growth_option when it is missing or bad.
bool take_growth_arg(const char* command, int argc, char** argv, int& i, Limits& limits);

// After the options: --baseline and --max-growth need each other, and the baseline is read now, so
// that a bad one is refused before anything else is read or run. One line on stderr and 2 when not.
std::optional<int> prepare_limits(const char* command, Limits& limits);

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

// Opens `dir_or_root` (one run directory, or a job root as reader::open_job_directory finds it) and
// checks `limits` on every run directory. Prints the verdict on `out`, each line starting
// "gpumemprof COMMAND: ", and returns 1 when a limit broke, else 0. Unreadable input: one line per
// unreadable directory (or the baseline's mismatch) on stderr, returns 2.
int check_limits(const char* command, const std::string& dir_or_root, const Limits& limits, FILE* out);
// The same on runs already found (`gpumemprof run`'s own processes); `where` names them.
int check_limits(const char* command, const std::string& where, const std::vector<reader::JobMember>& members,
                 const Limits& limits, FILE* out);

}  // namespace gmp::tool
