// GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md), from the shim's DeviceLimit events: the limit, the
// context it counted, and the peak as the shim counts it (reserved plus context), which no
// counter of the accounting holds, so it is followed through every memory event.
#pragma once

#include <cstdint>
#include <map>

#include "replay_step.h"

namespace gmp::analysis {

// The limit, the context it counted, the peak as it counts (reserved plus context) and its refusals.
struct DeviceLimitFigures {
  uint64_t limit = 0;  // 0: the device ran without a limit
  uint64_t context = 0, peak = 0, refusals = 0, first_excess = 0;
};

class DeviceLimitWatch {
 public:
  void add(const ReplayStep& step);
  // Every device a DeviceLimit event named.
  const std::map<int, DeviceLimitFigures>& devices() const { return limits_; }

 private:
  std::map<int, DeviceLimitFigures> limits_;
};

}  // namespace gmp::analysis
