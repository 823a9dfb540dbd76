#include "peak_watch.h"

namespace gmp::analysis {
namespace {

// The allocated figure by kind: managed memory is not part of it (docs/accounting.md), so the kinds
// add up to the figure.
std::array<uint64_t, kKindCount> allocated_by_kind(const DeviceStats& d) {
  std::array<uint64_t, kKindCount> out{};
  for (size_t k = 0; k < out.size(); ++k) out[k] = d.by_kind[k].bytes.current;
  out[static_cast<size_t>(Kind::Managed)] = 0;
  return out;
}

// The reserved figure by kind: pools count what they reserved, VMM its physical handles, graphs the
// graph memory pool.
std::array<uint64_t, kKindCount> reserved_by_kind(const DeviceStats& d) {
  std::array<uint64_t, kKindCount> out = allocated_by_kind(d);
  out[static_cast<size_t>(Kind::Pool)] = d.pool_reserved.current;
  out[static_cast<size_t>(Kind::Vmm)] = d.vmm_physical.current;
  out[static_cast<size_t>(Kind::Graph)] = d.graph_reserved.current;
  return out;
}

}  // namespace

void PeakWatch::start(const Accounting& acc, uint64_t at_ns, uint64_t index) {
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal < 0) continue;
    DevicePeaks& p = peaks_[ordinal];
    p.allocated = {d.allocated.current, at_ns, index, allocated_by_kind(d)};
    p.reserved = {d.reserved.current, at_ns, index, reserved_by_kind(d)};
  }
}

void PeakWatch::add(const ReplayStep& step) {
  if (!changes_memory(step.event.op)) return;
  // A pool or VMM event can change a device other than its own; there are few devices.
  for (const auto& [ordinal, d] : step.acc.devices()) {
    if (ordinal < 0) continue;
    DevicePeaks& p = peaks_[ordinal];
    if (d.allocated.current > p.allocated.bytes) {
      p.allocated = {d.allocated.current, step.at_ns, step.index, allocated_by_kind(d)};
    }
    if (d.reserved.current > p.reserved.bytes) {
      p.reserved = {d.reserved.current, step.at_ns, step.index, reserved_by_kind(d)};
    }
  }
}

DevicePeaks PeakWatch::of(int device) const {
  auto it = peaks_.find(device);
  return it != peaks_.end() ? it->second : DevicePeaks{};
}

}  // namespace gmp::analysis
