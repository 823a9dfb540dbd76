#include "fine_timeline.h"

#include <algorithm>

namespace gmp::analysis {

FineTimeline::FineTimeline(uint64_t origin_ns, uint64_t width_ns, size_t cap)
    : origin_(origin_ns), width_(std::max<uint64_t>(width_ns, 1)), cap_(cap) {}

// The slice holding `at_ns`: the last one kept, or a new one entered at `entered`. Events come in
// time order, so a new slice always goes at the end.
FineSlice& FineTimeline::slice_at(uint64_t at_ns, const Levels& entered) {
  const uint64_t index = (at_ns > origin_ ? at_ns - origin_ : 0) / width_;
  if (!slices_.empty() && slices_.back().index >= index) return slices_.back();
  FineSlice s;
  s.index = index;
  s.allocated_min = s.allocated_max = s.allocated_last = entered.allocated;
  s.reserved_min = s.reserved_max = s.reserved_last = entered.reserved;
  s.tensors_max = s.tensors_last = entered.tensors;
  s.framework_reserved_max = s.framework_reserved_last = entered.framework_reserved;
  slices_.push_back(s);
  if (slices_.size() > cap_) {
    coarsen();
    return slice_at(at_ns, entered);  // the same time, in the wider slices
  }
  return slices_.back();
}

void FineTimeline::level(uint64_t at_ns, const Levels& before, const Levels& after) {
  if (cap_ == 0) return;
  FineSlice& s = slice_at(at_ns, before);
  s.allocated_min = std::min(s.allocated_min, after.allocated);
  s.allocated_max = std::max(s.allocated_max, after.allocated);
  s.reserved_min = std::min(s.reserved_min, after.reserved);
  s.reserved_max = std::max(s.reserved_max, after.reserved);
  s.tensors_max = std::max(s.tensors_max, after.tensors);
  s.framework_reserved_max = std::max(s.framework_reserved_max, after.framework_reserved);
  s.allocated_last = after.allocated;
  s.reserved_last = after.reserved;
  s.tensors_last = after.tensors;
  s.framework_reserved_last = after.framework_reserved;
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
        continue;
      }
      FineSlice& m = slices_[out - 1];  // the earlier half: its extremes, the later half's end
      m.allocated_min = std::min(m.allocated_min, s.allocated_min);
      m.allocated_max = std::max(m.allocated_max, s.allocated_max);
      m.reserved_min = std::min(m.reserved_min, s.reserved_min);
      m.reserved_max = std::max(m.reserved_max, s.reserved_max);
      m.tensors_max = std::max(m.tensors_max, s.tensors_max);
      m.framework_reserved_max = std::max(m.framework_reserved_max, s.framework_reserved_max);
      m.nvml_process_max = std::max(m.nvml_process_max, s.nvml_process_max);
      m.allocated_last = s.allocated_last;
      m.reserved_last = s.reserved_last;
      m.tensors_last = s.tensors_last;
      m.framework_reserved_last = s.framework_reserved_last;
    }
    slices_.resize(out);
  }
}

}  // namespace gmp::analysis
