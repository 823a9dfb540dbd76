#include "live_set.h"

#include <algorithm>

namespace gmp::analysis {
namespace {

bool bigger(const LiveAllocation& a, const LiveAllocation& b) {
  return a.size != b.size ? a.size > b.size : a.timestamp_ns < b.timestamp_ns;
}

}  // namespace

void LiveSet::add(const LiveAllocation& a, size_t keep_largest) {
  total.add(a.size);
  by_kind[static_cast<size_t>(a.kind)].add(a.size);
  by_stack[a.stack_id].add(a.size);
  if (floor_ && !bigger(a, *floor_)) return;
  largest.push_back(a);
  // Trim now and then so the candidates stay a small multiple of what is kept.
  if (largest.size() >= 4 * keep_largest + 64) finish(keep_largest);
}

void LiveSet::finish(size_t keep_largest) {
  if (largest.size() > keep_largest) {
    std::nth_element(largest.begin(), largest.begin() + keep_largest, largest.end(), bigger);
    largest.resize(keep_largest);
  }
  std::sort(largest.begin(), largest.end(), bigger);
  if (keep_largest > 0 && largest.size() == keep_largest) floor_ = largest.back();
}

void collect_live(LiveSet& set, const Accounting& acc, int device, bool tensors, size_t largest) {
  for (const LiveAllocation& a : tensors ? acc.live_tensors() : acc.live_allocated(device)) {
    if (a.device == device && a.kind != Kind::HostPinned) set.add(a, largest);
  }
  set.finish(largest);
}

}  // namespace gmp::analysis
