#include "marker_log.h"
#include "records.h"

namespace gmp::analysis {

void MarkerLog::add(const ReplayStep& step) {
  const Event& e = step.event;
  Marker m{};
  m.at_ns = step.at_ns;
  m.device = e.device;
  switch (e.op) {
    case Op::Alert: {
      const auto a = AlertRecord::from_event(e);
      m.type = a.fired ? Marker::Type::AlertFired : Marker::Type::AlertCleared;
      m.alert = a.type;
      m.size = a.allocated;
      m.reserved = a.reserved;
      m.threshold = a.threshold;
      break;
    }
    case Op::Alloc:
      if (e.result == 0) return;
      m.type = Marker::Type::AllocFailed;
      m.size = e.size;
      m.result = e.result;
      m.api = e.api;
      break;
    case Op::OomBundle: m.type = Marker::Type::OomBundle; break;
    case Op::OomRecovered: m.type = Marker::Type::OomRecovered; break;
    case Op::Cleanup: {
      const auto c = CleanupRecord::from_event(e);
      m.type = Marker::Type::Cleanup;
      m.size = c.bytes_released;
      m.threshold = c.pools_trimmed;
      break;
    }
    default: return;
  }
  if (markers_.size() < max_) {
    markers_.push_back(m);
  } else {
    ++dropped_;
  }
}

}  // namespace gmp::analysis
