#include "export_replay.h"

namespace gmp::tool::exporter {

bool Replay::open(const std::string& trace_path, const reader::Window& window, reader::Progress* progress,
                  std::string& error) {
  if (!trace_.open(trace_path, error)) return false;
  trace_.set_window(window);
  trace_.set_progress(progress);
  return true;
}

bool Replay::begin_window() {
  if (begun_) return !failed();
  begun_ = true;
  if (!trace_.begin_window()) return false;
  take_figures();
  changes_.clear();  // the state the window starts from, not a change
  pinned_changed_ = false;
  return true;
}

bool Replay::next() {
  if (!begin_window() || !trace_.next()) return false;
  ++events_;
  take_figures();
  return true;
}

// Comparing every device after every event costs a few map steps; the alternative, predicting
// which device an op touches, would duplicate the accounting's rules.
void Replay::take_figures() {
  const Accounting& acc = trace_.accounting();
  changes_.clear();
  for (const auto& [device, stats] : acc.devices()) {
    if (device < 0) continue;
    const FrameworkStats& f = stats.framework;
    const Figures now{stats.allocated.current, stats.reserved.current, f.attached, f.allocated.current,
                      f.reserved.current};
    Figures& before = last_[device];
    if (now == before) continue;
    changes_.push_back({device, before, now});
    before = now;
  }
  const uint64_t pinned = acc.host_pinned().current;
  pinned_changed_ = pinned != pinned_last_;
  pinned_last_ = pinned;
}

int Replay::accounted_device() const {
  if (event().device >= 0) return event().device;
  return changes_.empty() ? -1 : changes_.front().device;
}

Figures Replay::figures(int device) const {
  auto it = last_.find(device);
  return it == last_.end() ? Figures{} : it->second;
}

std::optional<uint64_t> Replay::allocation_size() const {
  const Event& e = event();
  const bool tensor = e.op == Op::TensorAlloc || e.op == Op::TensorFreeRequested || e.op == Op::TensorFreeCompleted;
  if (!tensor && e.op != Op::Alloc && e.op != Op::Free) return std::nullopt;
  if (e.size != 0) return e.size;
  uint64_t fell = 0;
  for (const Change& c : changes_) {
    const uint64_t before = tensor ? c.before.framework_allocated : c.before.allocated;
    const uint64_t after = tensor ? c.after.framework_allocated : c.after.allocated;
    if (before > after) fell += before - after;
  }
  return fell;
}

}  // namespace gmp::tool::exporter
