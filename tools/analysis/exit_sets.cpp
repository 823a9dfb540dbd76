#include "exit_sets.h"

namespace gmp::analysis {

ExitSets live_at_exit(const Accounting& acc, size_t largest) {
  ExitSets out;
  for (const LiveAllocation& a : acc.live_outside_framework()) out.leaks.add(a, largest);
  for (const LiveAllocation& a : acc.live_allocations()) {
    if (a.kind == Kind::HostPinned) out.pinned_at_exit.add(a, largest);
  }
  for (const LiveAllocation& a : acc.live_tensors()) out.tensor_leaks.add(a, largest);
  out.leaks.finish(largest);
  out.pinned_at_exit.finish(largest);
  out.tensor_leaks.finish(largest);
  return out;
}

}  // namespace gmp::analysis
