#include "process_levels.h"

namespace gmp::analysis {
namespace {

template <typename Figure>
uint64_t process_total(const Accounting& acc, Figure figure) {
  uint64_t total = 0;
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0) total += figure(d);
  }
  return total;
}
uint64_t process_allocated(const Accounting& acc) {
  return process_total(acc, [](const DeviceStats& d) { return d.allocated.current; });
}
uint64_t process_tensors(const Accounting& acc) {
  return process_total(acc, [](const DeviceStats& d) { return d.framework.allocated.current; });
}

}  // namespace

void ProcessLevels::start(const Accounting& acc) {
  allocated_ = process_allocated(acc);
  tensors_ = process_tensors(acc);
}

void ProcessLevels::add(const ReplayStep& step) {
  const Op op = step.event.op;
  if (changes_memory(op)) allocated_ = process_allocated(step.acc);
  if (changes_framework_memory(op)) tensors_ = process_tensors(step.acc);
  tensors_recorded_ = tensors_recorded_ || op == Op::TensorAlloc;
}

}  // namespace gmp::analysis
