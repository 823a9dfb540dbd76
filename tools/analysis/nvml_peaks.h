// The highest figures NVML gave per device (the process's usage and the device's), from the
// telemetry samples: the driver's view next to what the profiler counted.
#pragma once

#include <cstdint>
#include <map>

#include "replay_step.h"

namespace gmp::analysis {

struct NvmlPeak {
  uint64_t process = 0;  // 0 when NVML never named this process's usage
  uint64_t device_used = 0;
};

class NvmlPeaks {
 public:
  void add(const ReplayStep& step);
  // Every device a sample named, even with zeros.
  const std::map<int, NvmlPeak>& devices() const { return peaks_; }

 private:
  std::map<int, NvmlPeak> peaks_;
};

}  // namespace gmp::analysis
