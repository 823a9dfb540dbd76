// What was still live when the replay ended (the window's end): the leaks a report lists, apart
// by level. Answered once, from the accounting's final state, since only the end matters.
#pragma once

#include <cstddef>

#include "accounting.h"
#include "live_set.h"

namespace gmp::analysis {

struct ExitSets {
  // Device memory (linear, pool, vmm handles, arrays, managed), less a framework's cache: its
  // segments are not leaks (summary.json's framework.cached_at_exit counts them).
  LiveSet leaks;
  LiveSet tensor_leaks;    // tensors still allocated
  LiveSet pinned_at_exit;  // pinned host memory
};

// Each set keeps its `largest` allocations.
ExitSets live_at_exit(const Accounting& acc, size_t largest);

}  // namespace gmp::analysis
