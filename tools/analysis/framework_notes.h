// What `gpumemprof report` and `gpumemprof html` say about the framework level (docs/report.md,
// "Two levels"), as plain sentences both print: whether tensor-level figures exist and why not,
// and, for runs without any framework events, what a framework's own pool hides from the driver
// level and the switch that makes each buffer visible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run_analysis.h"

namespace gmp::analysis {

// "PyTorch" for summary.json's "pytorch", another name as written; "PyTorch" when the summary has
// no framework object (the bridge's events are PyTorch's: Api torch_caching_allocator).
std::string framework_display_name(const RunAnalysis& run);

// What a list of live allocations names the kind: "tensor" for a framework's tensor (Kind::None,
// inside one of its segments), else the driver kind ("linear", "pool", ...).
std::string allocation_kind_label(const LiveAllocation& a);

// One figure of a device's framework level (docs/report.md, "Two levels"), as the report's lines
// and the HTML page's table rows show it.
struct FrameworkRow {
  std::string name;                    // "allocated", "reserved", "cached", "pending free", ...
  std::optional<uint64_t> peak;        // nullopt: no peak is kept (cached)
  std::optional<uint64_t> peak_at_ns;  // since the profiler started; nullopt: no time is kept
  std::optional<uint64_t> at_exit;     // nullopt: not known (NVML named no process figure)
  std::string meaning;
};
// allocated, reserved, cached, pending free, outside the framework and, where NVML named this
// process's usage, the context: that usage less the driver-level reserved.
std::vector<FrameworkRow> framework_rows(const RunAnalysis& run, const DeviceAnalysis& d);

// One line from summary.json's "framework" object: the bridge attached and the tensor-level
// figures follow, or they are not available and why (the refusal, explained). Empty when the run
// has no such object (the bridge never reported).
std::string framework_state_line(const RunAnalysis& run);

// Only for runs without a "framework" object (docs/report.md, "JAX and CuPy"): PyTorch loaded
// without the bridge, a JAX-like reservation of at least half a device, JAX or CuPy named by the
// command line or by a loaded library. Empty when nothing is hidden that we can tell.
std::vector<std::string> hidden_memory_notes(const RunAnalysis& run);

}  // namespace gmp::analysis
