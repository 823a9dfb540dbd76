#include "export_replay.h"

namespace gmp::tool::exporter {

bool Replay::open(const std::string& trace_path, std::string& error) {
  if (!trace_.open(trace_path) || !trace_.seed(acc_)) {
    error = trace_.error();
    return false;
  }
  return true;
}

bool Replay::next() {
  if (!trace_.next(event_)) return false;
  acc_.apply(event_);
  changes_.clear();
  // Comparing every device after every event costs a few map steps; the alternative, predicting
  // which device an op touches, would duplicate the accounting's rules.
  for (const auto& [device, stats] : acc_.devices()) {
    if (device < 0) continue;
    const FrameworkStats& f = stats.framework;
    const Figures now{stats.allocated.current, stats.reserved.current, f.attached, f.allocated.current,
                      f.reserved.current};
    Figures& before = last_[device];
    if (now == before) continue;
    changes_.push_back({device, before, now});
    before = now;
  }
  const uint64_t pinned = acc_.host_pinned().current;
  pinned_changed_ = pinned != pinned_last_;
  pinned_last_ = pinned;
  return true;
}

int Replay::accounted_device() const {
  if (event_.device >= 0) return event_.device;
  return changes_.empty() ? -1 : changes_.front().device;
}

Figures Replay::figures(int device) const {
  auto it = last_.find(device);
  return it == last_.end() ? Figures{} : it->second;
}

}  // namespace gmp::tool::exporter
