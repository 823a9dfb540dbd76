#include "fine_timeline.h"

#include <algorithm>

namespace gmp::analysis {

namespace {

// A slice that held one level throughout.
FineSlice point(uint64_t index, const Levels& l) {
  FineSlice s;
  s.index = index;
  s.allocated_min = s.allocated_max = s.allocated_last = l.allocated;
  s.reserved_min = s.reserved_max = s.reserved_last = l.reserved;
  s.tensors_max = s.tensors_last = l.tensors;
  s.framework_reserved_max = s.framework_reserved_last = l.framework_reserved;
  s.categories_at_max = s.categories_last = l.categories;
  return s;
}

// What came `later` in `m`'s time: their extremes, and the later one's end.
void absorb(FineSlice& m, const FineSlice& later) {
  m.allocated_min = std::min(m.allocated_min, later.allocated_min);
  m.allocated_max = std::max(m.allocated_max, later.allocated_max);
  m.reserved_min = std::min(m.reserved_min, later.reserved_min);
  m.reserved_max = std::max(m.reserved_max, later.reserved_max);
  if (later.tensors_max > m.tensors_max) {
    m.tensors_max = later.tensors_max;
    m.categories_at_max = later.categories_at_max;
  }
  m.framework_reserved_max = std::max(m.framework_reserved_max, later.framework_reserved_max);
  m.nvml_process_max = std::max(m.nvml_process_max, later.nvml_process_max);
  m.allocated_last = later.allocated_last;
  m.reserved_last = later.reserved_last;
  m.tensors_last = later.tensors_last;
  m.categories_last = later.categories_last;
  m.framework_reserved_last = later.framework_reserved_last;
}

}  // namespace

FineTimeline::FineTimeline(uint64_t origin_ns, uint64_t width_ns, size_t cap)
    : origin_(origin_ns), width_(std::max<uint64_t>(width_ns, 1)), cap_(cap) {}

// The slice holding `at_ns`: the last one kept, or a new one entered at `entered`. Events come in
// time order, so a new slice always goes at the end.
FineSlice& FineTimeline::slice_at(uint64_t at_ns, const Levels& entered) {
  const uint64_t index = (at_ns > origin_ ? at_ns - origin_ : 0) / width_;
  if (!slices_.empty() && slices_.back().index >= index) return slices_.back();
  slices_.push_back(point(index, entered));
  if (slices_.size() > cap_) {
    coarsen();
    return slice_at(at_ns, entered);  // the same time, in the wider slices
  }
  return slices_.back();
}

void FineTimeline::level(uint64_t at_ns, const Levels& before, const Levels& after) {
  if (cap_ == 0) return;
  absorb(slice_at(at_ns, before), point(0, after));
}

void FineTimeline::sample(uint64_t at_ns, const Levels& now, uint64_t process_bytes) {
  if (cap_ == 0) return;
  FineSlice& s = slice_at(at_ns, now);
  s.nvml_process_max = std::max(s.nvml_process_max, process_bytes);
}

// Twice the width: neighbours 2i and 2i+1 become slice i. Until the kept slices fit the cap.
void FineTimeline::coarsen() {
  while (slices_.size() > cap_) {
    width_ *= 2;
    size_t out = 0;
    for (size_t i = 0; i < slices_.size(); ++i) {
      FineSlice s = slices_[i];
      s.index /= 2;
      if (out == 0 || slices_[out - 1].index != s.index) {
        slices_[out++] = s;
      } else {
        absorb(slices_[out - 1], s);  // the later half into the earlier
      }
    }
    slices_.resize(out);
  }
}

}  // namespace gmp::analysis
