// A set of live allocations, summarised as it is filled: totals, by kind, by call site and the
// largest ones. Every "what was live" table (at a peak, at exit, in a timeline bucket) is one, so
// memory stays bounded by the call sites and the largest kept, whatever the number of allocations.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "accounting.h"
#include "bytes.h"

namespace gmp::analysis {

// By stack id, 0 when none was captured; `largest` biggest first.
struct LiveSet {
  Bytes total;
  std::array<Bytes, kKindCount> by_kind{};
  std::unordered_map<uint32_t, Bytes> by_stack;
  std::vector<LiveAllocation> largest;  // biggest first
  void add(const LiveAllocation& a, size_t keep_largest);
  void finish(size_t keep_largest);  // sorts and trims `largest`
 private:
  std::optional<LiveAllocation> floor_;  // the smallest kept at the last trim: what ranks below it never will be
};

// Adds to `set` the device memory (or, `tensors`, the framework's tensors) live on `device` in `acc`
// now, keeping the `largest`: what "live at the peak" lists.
void collect_live(LiveSet& set, const Accounting& acc, int device, bool tensors, size_t largest);

}  // namespace gmp::analysis
