// Each device's allocated and reserved peaks, and the trace position of the event that set each:
// the second pass replays up to that position to list what was live at the peak, which the
// summary's figures alone cannot tell.
#pragma once

#include <array>
#include <cstdint>
#include <map>

#include "accounting.h"
#include "replay_step.h"

namespace gmp::analysis {

// The moment a counter reached its peak, with the per-kind bytes at that moment: they add up to
// `bytes` (allocated: no managed memory; reserved: pools' reserved bytes, VMM's physical ones).
struct PeakPoint {
  uint64_t bytes = 0;
  uint64_t at_ns = 0;        // since the profiler started
  uint64_t event_index = 0;  // 1-based position in the trace of the event that set it; 0 none
  std::array<uint64_t, kKindCount> kind_bytes{};
};

struct DevicePeaks {
  PeakPoint allocated, reserved;
};

class PeakWatch {
 public:
  // A window's peaks start at the state where it starts (the last event before it): `at_ns` and
  // `index` are the window's start.
  void start(const Accounting& acc, uint64_t at_ns, uint64_t index);
  void add(const ReplayStep& step);
  // Zero for a device that never held memory.
  DevicePeaks of(int device) const;

 private:
  std::map<int, DevicePeaks> peaks_;
};

}  // namespace gmp::analysis
