// The timeline's finer level, for zooming into a slice of the coarse one (html/report.js re-slices
// the view from it): the same figures in time slices a power of two narrower, kept only where
// something happened, and coarsened as the run goes on so that at most `cap` slices are kept.
//
// Streaming and exact: each kept slice holds the lowest and highest level and the level at its end
// of what happened in it, the level it was entered at included; a slice that is not kept held
// the previous kept slice's last level throughout. Coarsening merges neighbours two by two, which
// keeps every figure exact at the wider slice (a missing neighbour held a level already counted);
// the categories at a merged slice's tensors_max are those of the half that reached it first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor_categories.h"  // model/: CategoryBytes

namespace gmp::analysis {

// The levels a slice tracks, as TimelineBucket names them; the tensors by category where the run's
// were decided (zeros otherwise).
struct Levels {
  uint64_t allocated = 0, reserved = 0, tensors = 0, framework_reserved = 0;
  CategoryBytes categories{};
};

struct FineSlice {
  uint64_t index = 0;  // start = origin + index * width
  uint64_t allocated_min = 0, allocated_max = 0, allocated_last = 0;
  uint64_t reserved_min = 0, reserved_max = 0, reserved_last = 0;
  uint64_t tensors_max = 0, tensors_last = 0;
  uint64_t framework_reserved_max = 0, framework_reserved_last = 0;
  uint64_t nvml_process_max = 0;  // 0: no sample with a process figure in the slice
  // The tensors by category when they first reached tensors_max in the slice, and at its end.
  CategoryBytes categories_at_max{}, categories_last{};
};

class FineTimeline {
 public:
  FineTimeline() = default;
  // Slices of `width_ns` from `origin_ns` to begin with; at most `cap` kept (0: none kept at all).
  FineTimeline(uint64_t origin_ns, uint64_t width_ns, size_t cap);

  // The device stood at `before` until `at_ns`, and at `after` from then on.
  void level(uint64_t at_ns, const Levels& before, const Levels& after);
  // An NVML sample of the process's usage at `at_ns`, the device standing at `now`.
  void sample(uint64_t at_ns, const Levels& now, uint64_t process_bytes);

  uint64_t origin_ns() const { return origin_; }
  uint64_t width_ns() const { return width_; }
  const std::vector<FineSlice>& slices() const { return slices_; }

 private:
  FineSlice& slice_at(uint64_t at_ns, const Levels& entered);
  void coarsen();

  uint64_t origin_ = 0, width_ = 1;
  size_t cap_ = 0;
  std::vector<FineSlice> slices_;
};

}  // namespace gmp::analysis
