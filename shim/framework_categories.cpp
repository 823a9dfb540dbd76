// Memory categories (docs/framework-bridge.md §Categories): the Python bootstrap
// (python_bootstrap/_gpumemprof_categories.py) tells which tensors are parameters, gradients or
// optimizer state, and where training phases begin. Each fact becomes a ring event; the tools
// decide every tensor's category from them post-mortem. Only while the bridge records in a running
// session: a label names a tensor the tracker reported, and, as the tracker, these never start a
// session (a forked child that labels at its exit gets no run directory).
#include <cstring>
#include <string>

#include "../collector/seam.h"
#include "export.h"
#include "framework_bridge.h"
#include "records.h"

using namespace gmp;
using namespace gmp::shim;

namespace {
bool recording() { return framework_recording() && session_running(); }
}  // namespace

// 1 when the bootstrap should gather categories: the bridge records and GPUMEMPROF_CATEGORIES is on.
GMP_EXPORT int gpumemprof_framework_categories() {
  return recording() && g_categories.load(std::memory_order_relaxed) ? 1 : 0;
}

// The id of a name (a parameter's module path) in attribution.jsonl, for labels; 0 when none.
GMP_EXPORT uint32_t gpumemprof_framework_name(const char* name) {
  if (name == nullptr || !recording()) return 0;
  return intern_name(name, static_cast<uint32_t>(strnlen(name, 4096)));
}

// `count` tensors of `category` (a TensorCategory: parameters, gradients, optimizer state), each
// the block at addresses[i] on devices[i], named names[i] (0: unnamed).
GMP_EXPORT void gpumemprof_framework_label(int category, uint64_t count, const uint64_t* addresses,
                                           const int32_t* devices, const uint32_t* names) {
  if (category <= 0 || category >= kTensorCategoryCount || addresses == nullptr || devices == nullptr ||
      !recording()) {
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    session_record(devices[i], [&](Event& e) {
      TensorLabelRecord{addresses[i], static_cast<TensorCategory>(category), names != nullptr ? names[i] : 0}.to_event(e);
      e.api = Api::torch_caching_allocator;
    });
  }
}

// A line for gpumemprof.log from the bootstrap: what failed in it, once. Not on stderr: the
// program's output stays its own, and categories are decided without what failed.
GMP_EXPORT void gpumemprof_framework_log(const char* line) {
  if (line == nullptr) return;
  log_info(std::string("categories: ") + std::string(line, strnlen(line, 1024)));
}

// A training phase (a TrainingPhase) begins, in `step` and `micro_batch` (PhaseRecord).
GMP_EXPORT void gpumemprof_framework_phase(int phase, uint64_t step, uint64_t micro_batch) {
  if (phase <= 0 || phase > static_cast<int>(TrainingPhase::Optimizer) || !recording()) return;
  session_record(-1, [&](Event& e) {
    PhaseRecord{static_cast<TrainingPhase>(phase), step, micro_batch}.to_event(e);
    e.api = Api::torch_caching_allocator;
  });
}
