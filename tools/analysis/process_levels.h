// The process's allocated bytes and its tensors' (the framework's allocated), summed over its
// devices: what ranges and marks are measured in (attribution_replay.h). Kept up to date on the
// events that move them rather than summed on every event.
#pragma once

#include <cstdint>

#include "accounting.h"
#include "replay_step.h"

namespace gmp::analysis {

class ProcessLevels {
 public:
  // The levels where the window starts.
  void start(const Accounting& acc);
  void add(const ReplayStep& step);
  uint64_t allocated() const { return allocated_; }
  uint64_t tensors() const { return tensors_; }
  // A tensor was allocated: ranges and marks get tensor figures too.
  bool tensors_recorded() const { return tensors_recorded_; }

 private:
  uint64_t allocated_ = 0, tensors_ = 0;
  bool tensors_recorded_ = false;
};

}  // namespace gmp::analysis
