#include "marker_log.h"

namespace gmp::analysis {

void MarkerLog::add(const ReplayStep& step) {
  const Event& e = step.event;
  Marker m{};
  m.at_ns = step.at_ns;
  m.device = e.device;
  switch (e.op) {
    case Op::Alert:
      m.type = e.result != 0 ? Marker::Type::AlertFired : Marker::Type::AlertCleared;
      m.alert = static_cast<AlertType>(e.value);
      m.size = e.size;
      m.reserved = e.object;
      m.threshold = e.address;
      break;
    case Op::Alloc:
      if (e.result == 0) return;
      m.type = Marker::Type::AllocFailed;
      m.size = e.size;
      m.result = e.result;
      m.api = e.api;
      break;
    case Op::OomBundle: m.type = Marker::Type::OomBundle; break;
    case Op::OomRecovered: m.type = Marker::Type::OomRecovered; break;
    case Op::Cleanup:
      m.type = Marker::Type::Cleanup;
      m.size = e.size;
      m.threshold = e.value;
      break;
    default: return;
  }
  if (markers_.size() < max_) {
    markers_.push_back(m);
  } else {
    ++dropped_;
  }
}

}  // namespace gmp::analysis
