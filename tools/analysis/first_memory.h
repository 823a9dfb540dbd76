// When a device first held memory in the window: where the timeline starts, so that a program's
// imports and setup are not drawn as an empty chart.
#pragma once

#include <cstdint>
#include <optional>

#include "accounting.h"
#include "replay_step.h"

namespace gmp::analysis {

class FirstMemory {
 public:
  // The state where the window starts (`at_ns` since the profiler started): memory held there
  // was first held at the start.
  void start(const Accounting& acc, uint64_t at_ns);
  void add(const ReplayStep& step);
  // Nothing while no device has held memory.
  std::optional<uint64_t> at_ns() const { return at_ns_; }

 private:
  std::optional<uint64_t> at_ns_;
};

}  // namespace gmp::analysis
