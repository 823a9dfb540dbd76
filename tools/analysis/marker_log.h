// The moments a report lists and a timeline draws (alerts, failed allocations, the OOM recorder's
// bundles and recoveries, cleanups), bounded: a run that fails millions of allocations keeps the
// first `max_markers` and counts the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "event.h"
#include "replay_step.h"

namespace gmp::analysis {

// Something that happened at a moment, drawn on timelines and listed in reports.
struct Marker {
  enum class Type { AlertFired, AlertCleared, AllocFailed, OomBundle, OomRecovered, Cleanup };
  Type type;
  uint64_t at_ns = 0;
  int device = -1;
  AlertType alert = AlertType::Warning;  // alerts only
  uint64_t size = 0;       // failed: requested bytes; alerts: allocated at the time; cleanup: bytes given back
  uint64_t reserved = 0;   // alerts: reserved at the time
  uint64_t threshold = 0;  // alerts: threshold bytes; cleanup: pools trimmed
  int16_t result = 0;      // failed: the CUresult
  Api api = Api::None;     // failed: the entry point
};

class MarkerLog {
 public:
  explicit MarkerLog(size_t max_markers) : max_(max_markers) {}
  void add(const ReplayStep& step);
  const std::vector<Marker>& markers() const { return markers_; }  // in trace order
  uint64_t dropped() const { return dropped_; }

 private:
  size_t max_;
  std::vector<Marker> markers_;
  uint64_t dropped_ = 0;
};

}  // namespace gmp::analysis
