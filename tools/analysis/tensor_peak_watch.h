// Each device's tensor peak (the framework's allocated bytes) and the trace position of the
// allocation that set it: the second pass lists the tensors live there. Apart from PeakWatch
// because tensors move on the bridge's events, and a detach voids what came before it.
#pragma once

#include <cstdint>
#include <map>

#include "accounting.h"
#include "replay_step.h"

namespace gmp::analysis {

struct TensorPeak {
  uint64_t bytes = 0;
  uint64_t event_index = 0;  // 1-based position in the trace; 0 none
};

class TensorPeakWatch {
 public:
  // A window's tensor peak starts at the tensors live where it starts (trace position `index`).
  void start(const Accounting& acc, uint64_t index);
  void add(const ReplayStep& step);
  // Zero for a device with no tensors since the bridge last attached.
  TensorPeak of(int device) const;

 private:
  std::map<int, TensorPeak> peaks_;
};

}  // namespace gmp::analysis
