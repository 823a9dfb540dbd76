#include "device_limit_watch.h"
#include "records.h"

#include <algorithm>

namespace gmp::analysis {
namespace {

// The peak as the shim counts: reserved plus the context last measured.
void note_peak(DeviceLimitFigures& l, const DeviceStats& d) {
  if (l.limit != 0) l.peak = std::max(l.peak, d.reserved.current + l.context);
}

}  // namespace

void DeviceLimitWatch::add(const ReplayStep& step) {
  const Event& e = step.event;
  const auto& devices = step.acc.devices();
  if (e.op == Op::DeviceLimit && e.device >= 0) {
    const auto r = DeviceLimitRecord::from_event(e);
    DeviceLimitFigures& l = limits_[e.device];
    l.limit = r.limit;
    l.context = r.context;
    const uint64_t need = r.before + r.bytes;
    if (r.refused && l.refusals++ == 0) l.first_excess = need > r.limit ? need - r.limit : 0;
    if (auto d = devices.find(e.device); d != devices.end()) note_peak(l, d->second);
  }
  if (!changes_memory(e.op)) return;
  // A pool or VMM event can change a device other than its own.
  for (auto& [ordinal, l] : limits_) {
    if (auto d = devices.find(ordinal); d != devices.end()) note_peak(l, d->second);
  }
}

}  // namespace gmp::analysis
