// The framework level of Accounting (docs/accounting.md §Two levels): tensors and segments from the
// bridge's events, and what the device holds outside the framework.
#include <algorithm>
#include <unordered_set>

#include "accounting.h"
#include "records.h"

namespace gmp {
namespace {

// How long, in event time, a thread's driver call may wait for the framework event that explains
// it. PyTorch records a segment right after its cudaMalloc returns, under its lock, on the same
// thread: microseconds.
constexpr uint64_t kPairingWindowNs = 10'000'000;

// The peak's time is when it was first reached, as at driver level (refresh_totals).
void add_peak(Counter& c, uint64_t& peak_ns, uint64_t n, uint64_t ts) {
  const uint64_t before = c.peak;
  c.add(n);
  if (c.peak > before) peak_ns = ts;
}

}  // namespace

void Accounting::on_framework(const Event& e) {
  if (e.op == Op::FrameworkAttach) {
    on_framework_attach(e);
    return;
  }
  // A seed taken after the bridge attached may repeat what an event already said: that one counts.
  if (FrameworkBlockRecord::from_event(e).seeded && ((e.op == Op::TensorAlloc && tensors_.find(e.address) != nullptr) ||
                             ((e.op == Op::SegmentAlloc || e.op == Op::SegmentMap) && in_framework_segment(e.address)))) {
    return;
  }
  FrameworkStats& f = dev(e.device).framework;
  f.attached = true;
  settle_free_request(e);
  switch (e.op) {
    case Op::TensorAlloc: {
      LiveAllocation stale;
      if (tensors_.erase(e.address, &stale)) {  // its free never reached us
        dev(stale.device).framework.allocated.sub(stale.size);
        if (stale.pending_counted) dev(stale.device).framework.pending_free.sub(stale.size);
      }
      if (stale.pool != 0) dev(stale.device).framework.private_pools[stale.pool].allocated.sub(stale.size);
      const uint64_t pool = FrameworkBlockRecord::from_event(e).pool;
      tensors_.insert_or_assign(e.address, LiveAllocation{e.address, e.size, e.timestamp_ns, pool, e.thread_id,
                                                          e.stack_id, e.device, Kind::None, e.api});
      if (pool != 0) f.private_pools[pool].allocated.add(e.size);
      ++f.tensor_allocs;
      add_peak(f.allocated, f.allocated_peak_ns, e.size, e.timestamp_ns);
      break;
    }
    case Op::TensorFreeRequested:
      if (LiveAllocation* a = tensors_.find(e.address); a != nullptr && !a->free_requested) {
        a->free_requested = true;
        a->pending_counted = true;
        f.pending_free.current += a->size;  // its peak waits: pending only if its completion does not come next
        requested_[e.device] = e.address;
      }
      break;
    case Op::TensorFreeCompleted: {
      LiveAllocation a;
      if (!tensors_.erase(e.address, &a)) break;
      FrameworkStats& owner = dev(a.device).framework;
      ++owner.tensor_frees;
      owner.allocated.sub(a.size);
      if (a.pool != 0) owner.private_pools[a.pool].allocated.sub(a.size);
      if (a.pending_counted) owner.pending_free.sub(a.size);
      break;
    }
    case Op::SegmentAlloc:
    case Op::SegmentMap:
      ++f.segment_allocs;
      f.reserved.sub(add_segment(e.device, e.address, e.size, FrameworkBlockRecord::from_event(e).pool));  // a range seen twice counts once
      add_peak(f.reserved, f.reserved_peak_ns, e.size, e.timestamp_ns);
      break;
    case Op::SegmentFree:
    case Op::SegmentUnmap:
      ++f.segment_frees;
      // Only what was counted leaves: a segment reserved while recording was paused never came in.
      f.reserved.sub(remove_segment(e.address, e.size));
      break;
    case Op::FrameworkOom: ++f.ooms; break;
    default: break;  // FrameworkOomFigures: for the OOM recorder and the tools
  }
}

// PyTorch records every free as free_requested then free_completed; the completion comes at once,
// under the same lock, unless work on another stream still uses the block. A requested free counts
// in pending_free's current value at once, but in its peak only once the device's next framework
// event shows it waited (is not its completion).
void Accounting::settle_free_request(const Event& e) {
  auto it = requested_.find(e.device);
  if (it == requested_.end()) return;
  const uint64_t address = it->second;
  requested_.erase(it);
  if (e.op == Op::TensorFreeCompleted && e.address == address) return;
  Counter& pending = dev(e.device).framework.pending_free;
  pending.peak = std::max(pending.peak, pending.current);
}

void Accounting::on_framework_attach(const Event& e) {
  framework_.reported = true;
  const auto a = FrameworkAttachRecord::from_event(e);
  framework_.attached = a.attached;
  framework_.version = a.version;
  framework_.refusal = a.refusal;
  if (framework_.attached) {
    if (e.device >= 0) dev(e.device).framework.attached = true;
    return;
  }
  // Detached (a failed self-check): what arrived before cannot be trusted; the driver level stays.
  tensors_ = AddressMap<LiveAllocation>();
  requested_.clear();
  segments_.clear();
  unpaired_.clear();
  for (auto& [_, d] : devices_) d.framework = FrameworkStats{};
}

// Adds the range; returns the bytes of it that were already there (now counted once).
uint64_t Accounting::add_segment(int16_t device, uint64_t address, uint64_t size, uint64_t pool) {
  const uint64_t overlap = remove_segment(address, size);
  segments_[address] = Segment{address, size, device, pool};
  if (pool != 0) dev(device).framework.private_pools[pool].reserved.add(size);
  return overlap;
}

// Removes [address, address + size) from the segment ranges, splitting a range it cuts; returns
// the bytes removed.
uint64_t Accounting::remove_segment(uint64_t address, uint64_t size) {
  uint64_t removed = 0;
  const uint64_t end = address + size;
  auto it = segments_.upper_bound(address);
  if (it != segments_.begin()) --it;
  while (it != segments_.end() && it->first < end) {
    const Segment s = it->second;
    const uint64_t s_end = s.address + s.size;
    if (s_end <= address) {
      ++it;
      continue;
    }
    it = segments_.erase(it);
    const uint64_t piece = std::min(s_end, end) - std::max(s.address, address);
    removed += piece;
    if (s.pool != 0) dev(s.device).framework.private_pools[s.pool].reserved.sub(piece);
    if (s.address < address) segments_[s.address] = Segment{s.address, address - s.address, s.device, s.pool};
    if (s_end > end) segments_[end] = Segment{end, s_end - end, s.device, s.pool};
  }
  return removed;
}

bool Accounting::in_framework_segment(uint64_t address) const {
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return false;
  --it;
  return address < it->second.address + it->second.size;
}

// After every event once a framework attached: the driver-level reserved outside its segments.
// Its peak waits while a thread is between a driver call and the framework event that explains it,
// so that a segment is never counted outside for the instant between its cudaMalloc and its
// SegmentAlloc (or between its SegmentFree and its cuMemFree; PyTorch unmaps expandable pages
// before it records SegmentUnmap, so that one needs no wait). A driver allocation that turns out
// not to be a segment enters the peak with the figure it made when it happened, even if it was
// freed by the time its thread said so.
void Accounting::refresh_outside(const Event& e) {
  auto outside_of = [](const DeviceStats& d) {
    return d.reserved.current - std::min(d.framework.reserved.current, d.reserved.current);
  };
  auto settle = [&](const Unpaired& u) {  // the driver allocation was not a segment
    if (!u.driver_alloc) return;
    FrameworkStats& f = dev(u.device).framework;
    if (u.outside > f.outside.peak) {
      f.outside.peak = u.outside;
      f.outside_peak_ns = u.timestamp_ns;
    }
  };
  const bool driver_alloc = e.result == 0 && (e.op == Op::Alloc || e.op == Op::VmmCreate || e.op == Op::VmmMap) &&
                            e.kind != Kind::HostPinned;
  const bool continues = e.op == Op::VmmCreate || e.op == Op::VmmMap || e.op == Op::VmmUnmap ||
                         e.op == Op::VmmRelease;
  const bool explains = e.op == Op::SegmentAlloc || e.op == Op::SegmentMap;
  auto mine = std::find_if(unpaired_.begin(), unpaired_.end(), [&](auto& u) { return u.thread == e.thread_id; });
  if (mine != unpaired_.end() && !continues) {
    if (!explains) settle(*mine);
    unpaired_.erase(mine);
    mine = unpaired_.end();
  }
  if ((driver_alloc || e.op == Op::SegmentFree) && mine == unpaired_.end() && e.device >= 0) {
    unpaired_.push_back({e.thread_id, e.timestamp_ns, static_cast<int16_t>(e.device), driver_alloc,
                         outside_of(dev(e.device))});
  } else if (driver_alloc && mine != unpaired_.end() && e.device >= 0) {
    mine->outside = std::max(mine->outside, outside_of(dev(e.device)));  // cuMemCreate, then cuMemMap
  }
  std::erase_if(unpaired_, [&](const Unpaired& u) {
    const bool stale = e.timestamp_ns - std::min(u.timestamp_ns, e.timestamp_ns) > kPairingWindowNs;
    if (stale) settle(u);
    return stale;
  });
  const bool seeding = FrameworkBlockRecord::from_event(e).seeded && e.api == Api::torch_caching_allocator &&
                       (e.op == Op::TensorAlloc || e.op == Op::TensorFreeRequested || e.op == Op::SegmentAlloc ||
                        e.op == Op::SegmentMap);
  for (auto& [_, d] : devices_) {
    FrameworkStats& f = d.framework;
    if (!f.attached) continue;
    const uint64_t outside = outside_of(d);
    // While seeding, the driver level already holds every segment the seeds are still adding.
    if (!unpaired_.empty() || seeding) {
      f.outside.current = outside;
    } else {
      if (outside > f.outside.peak) f.outside_peak_ns = e.timestamp_ns;
      f.outside.set(outside);
    }
  }
}

std::vector<LiveAllocation> Accounting::live_tensors() const {
  std::vector<LiveAllocation> out;
  out.reserve(tensors_.size());
  tensors_.for_each([&out](uint64_t, const LiveAllocation& a) { out.push_back(a); });
  return out;
}

std::vector<Accounting::Segment> Accounting::framework_segments() const {
  std::vector<Segment> out;
  out.reserve(segments_.size());
  for (auto& [_, s] : segments_) out.push_back(s);
  return out;
}

template <typename F>
void Accounting::for_each_live_outside_framework(F&& f) const {
  // VMM handles mapped into a framework's (expandable) segment are its cache too.
  std::unordered_set<uint64_t> cache_handles;
  if (!segments_.empty()) {
    for (auto& [va, m] : mappings_) {
      if (in_framework_segment(va)) cache_handles.insert(m.handle);
    }
  }
  device_ptrs_.for_each([&](uint64_t, const LiveAllocation& a) {
    if (!in_framework_segment(a.address)) f(a);
  });
  arrays_.for_each([&](uint64_t, const LiveAllocation& a) { f(a); });
  for (auto& [key, h] : handles_) {
    if (!cache_handles.contains(key)) f(h.alloc);
  }
}

std::vector<LiveAllocation> Accounting::live_outside_framework() const {
  std::vector<LiveAllocation> out;
  for_each_live_outside_framework([&out](const LiveAllocation& a) { out.push_back(a); });
  return out;
}

std::map<int, Accounting::LiveTotals> Accounting::live_by_device() const {
  std::map<int, LiveTotals> out;
  auto add = [&out](const LiveAllocation& a) {
    LiveTotals& t = out[a.device];
    ++t.count;
    t.bytes += a.size;
  };
  // The runtime's own buffers (kind runtime) are not the program's to free: no leak.
  for_each_live_outside_framework([&add](const LiveAllocation& a) {
    if (a.kind != Kind::Runtime) add(a);
  });
  tensors_.for_each([&add](uint64_t, const LiveAllocation& a) { add(a); });
  return out;
}

Accounting::LiveTotals Accounting::live_at_exit() const {
  LiveTotals t;
  for (const auto& [_, d] : live_by_device()) {
    t.count += d.count;
    t.bytes += d.bytes;
  }
  return t;
}

Accounting::LiveTotals Accounting::cached_at_exit() const {
  LiveTotals t;
  for (auto& [_, s] : segments_) {
    ++t.count;
    t.bytes += s.size;
  }
  return t;
}

}  // namespace gmp
