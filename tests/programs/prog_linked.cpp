// Reaches the driver like a binary linked with -lcuda: direct calls, bound through the PLT to the
// exported versioned names (cuMemAlloc_v2, cuMemAllocAsync, ...). The table entries are thin
// forwarders whose bodies are those direct calls, so every call in the scenario is a PLT call.
#include <cstdio>

#include "driver_table.h"
#include "fakecuda_hooks.h"
#include "scenario.h"

namespace {

// Direct<&f>::call forwards to f with a direct (PLT) call.
template <auto F>
struct Direct;
template <typename R, typename... A, R (*F)(A...)>
struct Direct<F> {
  static R call(A... a) { return F(a...); }
};

}  // namespace

int main() {
  DriverTable t;
  t.how = "linked";
#define GMP_LINK(member, base, per_thread, abi) t.member = &Direct<&::member>::call;
  GMP_DRIVER_ENTRIES(GMP_LINK)
#undef GMP_LINK
  t.fakecuda_alloc_untracked = &Direct<&::fakecuda_alloc_untracked>::call;
  return gmp::run_scenario(t);
}
