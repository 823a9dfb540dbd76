#include "accounting.h"
#include "records.h"

#include <algorithm>

namespace gmp {

DeviceStats& Accounting::dev(int d) {
  const bool small = d >= 0 && d < static_cast<int>(by_ordinal_.size());
  if (small && by_ordinal_[d] != nullptr) return *by_ordinal_[d];
  auto [it, inserted] = devices_.try_emplace(d);
  if (inserted) it->second.device = d;
  if (small) by_ordinal_[d] = &it->second;  // map nodes never move
  return it->second;
}

AddressMap<LiveAllocation>& Accounting::table_for(Kind k) {
  switch (k) {
    case Kind::Array: return arrays_;
    case Kind::HostPinned: return pinned_;
    default: return device_ptrs_;  // linear, pool and managed share the device address space
  }
}

void Accounting::apply(const Event& e) {
  // A record read from a damaged file may carry any byte: never index by_kind with it.
  if (static_cast<size_t>(e.kind) >= static_cast<size_t>(kKindCount)) return;
  ++events_;
  if (events_ == 1) first_ns_ = e.timestamp_ns;
  last_ns_ = std::max(last_ns_, e.timestamp_ns);
  switch (e.op) {
    case Op::Alloc: on_alloc(e); break;
    case Op::Free: on_free(e); break;
    case Op::ReleaseFailed: on_release_failed(e); break;
    case Op::PoolCreate: on_pool_create(e); break;
    case Op::PoolDestroy: on_pool_destroy(e); break;
    case Op::PoolReserved: {
      const auto r = PoolReservedRecord::from_event(e);
      set_pool_reserved(r.pool, e.device, r.reserved, r.reserved_high);
      break;
    }
    case Op::VmmCreate: on_vmm_create(e); break;
    case Op::VmmRelease: on_vmm_release(e); break;
    case Op::VmmMap: on_vmm_map(e); break;
    case Op::VmmUnmap: on_vmm_unmap(e); break;
    case Op::DeviceInfo: dev(e.device).total_bytes = DeviceInfoRecord::from_event(e).total; break;
    case Op::OomBundle: ++oom_.bundles_written; break;
    case Op::OomRecovered: ++oom_.recovered; break;
    case Op::DriverMemory: case Op::Cleanup: case Op::DeviceLimit: break;  // the cleanup's pool_reserved events carry the figures
    case Op::Sample: {
      const auto s = SampleRecord::from_event(e);
      auto& t = dev(e.device).nvml;
      ++t.samples;
      t.device_used = s.device_used;
      t.device_total = s.device_total;
      t.process_known = s.process_known();
      if (t.process_known) {
        t.process_used = s.process_used;
        t.process_used_peak = std::max(t.process_used_peak, s.process_used);
      }
      break;
    }
    case Op::Alert:
      if (const uint64_t type = AlertRecord::type_index(e); AlertRecord::from_event(e).fired && type < alerts_.size()) {
        ++alerts_[type];
      }
      break;
    case Op::Mark: case Op::RangePush: case Op::RangePop: case Op::Pause: case Op::Resume:
    case Op::TensorLabel: case Op::Phase:
      break;  // attribution and categories only: the tools replay them (tools/analysis)
    case Op::TensorAlloc: case Op::TensorFreeRequested: case Op::TensorFreeCompleted: case Op::SegmentAlloc:
    case Op::SegmentFree: case Op::SegmentMap: case Op::SegmentUnmap: case Op::FrameworkOom:
    case Op::FrameworkOomFigures: case Op::FrameworkAttach:
      on_framework(e);
      break;
    case Op::GraphAllocNode: case Op::GraphFreeNode: case Op::CaptureBegin: case Op::CaptureEnd:
    case Op::GraphInstantiate: case Op::GraphLaunch: case Op::GraphExecDestroy: case Op::GraphDestroy:
    case Op::GraphMemory: case Op::GraphChild:
      on_graph(e);
      break;
    case Op::None: break;
  }
  if (framework_.attached) refresh_outside(e);
}

void Accounting::add_bytes(const LiveAllocation& a) {
  if (a.kind == Kind::HostPinned) {
    host_pinned_.add(a.size);
    return;
  }
  dev(a.device).kind(a.kind).bytes.add(a.size);
  refresh_totals(a.device, a.timestamp_ns);
}

void Accounting::remove_bytes(const LiveAllocation& a) {
  if (a.kind == Kind::HostPinned) {
    host_pinned_.sub(a.size);
    return;
  }
  dev(a.device).kind(a.kind).bytes.sub(a.size);
  refresh_totals(a.device, last_ns_);
}

void Accounting::reset_peaks(uint64_t at_ns) {
  for (auto& [_, d] : devices_) {
    for (Counter* c : {&d.allocated, &d.reserved, &d.pool_reserved, &d.vmm_physical, &d.graph_reserved, &d.graph_used}) {
      c->reset_peak();
    }
    for (KindStats& k : d.by_kind) k.bytes.reset_peak();
    d.allocated_peak_ns = d.reserved_peak_ns = at_ns;
    d.nvml.process_used_peak = d.nvml.process_used;
    d.framework.reset_peaks(at_ns);
  }
  host_pinned_.reset_peak();
}

void Accounting::refresh_totals(int device, uint64_t ts) {
  DeviceStats& d = dev(device);
  const uint64_t plain = d.kind(Kind::Linear).bytes.current + d.kind(Kind::Array).bytes.current;
  const uint64_t allocated = plain + d.kind(Kind::Pool).bytes.current + d.kind(Kind::Vmm).bytes.current +
                             d.kind(Kind::Graph).bytes.current;
  // The runtime's own memory is held from the device but no allocation call of the program's.
  const uint64_t reserved = plain + d.pool_reserved.current + d.vmm_physical.current + d.graph_reserved.current +
                            d.kind(Kind::Runtime).bytes.current;
  if (allocated > d.allocated.peak) d.allocated_peak_ns = ts;
  if (reserved > d.reserved.peak) d.reserved_peak_ns = ts;
  d.allocated.set(allocated);
  d.reserved.set(reserved);
}

void Accounting::on_alloc(const Event& e) {
  if (e.result != 0) {
    record_failure(e, e.kind, e.size);
    return;
  }
  LiveAllocation a{e.address, e.size, e.timestamp_ns, e.object, e.thread_id, e.stack_id, e.device, e.kind, e.api};
  auto& table = table_for(e.kind);
  if (const LiveAllocation* old = table.find(e.address)) {
    // The driver handed out an address we still hold: its release happened outside our view.
    const LiveAllocation stale = *old;
    table.erase(e.address);
    remove_bytes(stale);
  }
  table.insert_or_assign(e.address, a);
  if (e.kind == Kind::HostPinned) {
    ++pinned_allocs_;
  } else {
    DeviceStats& d = dev(e.device);
    ++d.kind(e.kind).allocs;
    ++d.alloc_count;
  }
  if (e.kind == Kind::Pool && e.object != 0) {
    if (e.value == kNoReading) {
      pools_.try_emplace(e.object, Pool{e.device, 0});  // its figures come with the next reading
    } else {
      // Account the pool's growth first so that reserved never trails allocated at this event.
      set_pool_reserved(e.object, e.device, e.value);
    }
  }
  add_bytes(a);
}

void Accounting::on_free(const Event& e) {
  if (e.address == 0) return;  // freeing NULL is a no-op for the driver
  Undo& u = begin_undo(e.thread_id, Op::Free, e.address);
  LiveAllocation a;
  if (!table_for(e.kind).erase(e.address, &a)) {
    ++unknown_frees_;
    return;
  }
  u.found = true;
  u.alloc = a;
  if (a.kind == Kind::HostPinned) {
    ++pinned_frees_;
  } else {
    DeviceStats& d = dev(a.device);
    ++d.kind(a.kind).frees;
    ++d.free_count;
  }
  remove_bytes(a);
}

Accounting::Undo& Accounting::begin_undo(uint32_t thread, Op op, uint64_t address) {
  if (last_undo_ == nullptr || last_undo_thread_ != thread) {
    last_undo_ = &undo_[thread];
    last_undo_thread_ = thread;
  }
  Undo& u = *last_undo_;
  u.op = op;
  u.address = address;
  u.found = false;
  u.handle_freed = false;
  u.mappings.clear();  // clear() keeps their storage for the next release
  u.pool_allocs.clear();
  u.freed_handles.clear();
  return u;
}

void Accounting::on_release_failed(const Event& e) {
  ++failed_releases_;
  auto it = undo_.find(e.thread_id);
  if (it == undo_.end() || it->second.op == Op::None || it->second.address != e.address) return;
  Undo u = it->second;
  it->second.op = Op::None;  // consumed; the node stays, last_undo_ may point at it
  switch (u.op) {
    case Op::Free:
      if (!u.found) {
        --unknown_frees_;
        return;
      }
      table_for(u.alloc.kind).insert_or_assign(u.alloc.address, u.alloc);
      if (u.alloc.kind == Kind::HostPinned) {
        --pinned_frees_;
      } else {
        --dev(u.alloc.device).kind(u.alloc.kind).frees;
        --dev(u.alloc.device).free_count;
      }
      add_bytes(u.alloc);
      return;
    case Op::VmmRelease:
      if (!u.found) {
        --unknown_frees_;
        return;
      }
      if (u.handle_freed) {
        handles_[u.address] = Handle{u.alloc, false, 0};
        dev(u.alloc.device).vmm_physical.add(u.alloc.size);
      } else {
        handles_[u.address].released = false;
      }
      --dev(u.alloc.device).kind(Kind::Vmm).frees;
      --dev(u.alloc.device).free_count;
      refresh_totals(u.alloc.device, last_ns_);
      return;
    case Op::VmmUnmap:
      for (auto& [va, m] : u.mappings) {
        mappings_[va] = m;
        auto h = handles_.find(m.handle);
        if (h == handles_.end()) {
          // The unmap had freed a released handle's memory; it is mapped (and so alive) again.
          for (auto& a : u.freed_handles) {
            if (a.address == m.handle) {
              handles_[a.address] = Handle{a, true, 0};
              dev(a.device).vmm_physical.add(a.size);
            }
          }
          h = handles_.find(m.handle);
        }
        if (h != handles_.end()) ++h->second.mappings;
        dev(m.device).kind(Kind::Vmm).bytes.add(m.size);
        refresh_totals(m.device, last_ns_);
      }
      return;
    case Op::PoolDestroy:
      pools_[u.address] = u.pool;
      dev(u.pool.device).pool_reserved.add(u.pool.reserved);
      for (auto& a : u.pool_allocs) {
        device_ptrs_.insert_or_assign(a.address, a);
        --dev(a.device).released_by_pool_destroy;
        add_bytes(a);
      }
      refresh_totals(u.pool.device, last_ns_);
      return;
    default:
      return;
  }
}

void Accounting::on_pool_create(const Event& e) {
  if (e.result != 0 || e.object == 0) return;
  pools_[e.object] = Pool{e.device, 0};
  dev(e.device);
}

void Accounting::set_pool_reserved(uint64_t pool, int16_t device, uint64_t bytes, uint64_t high) {
  auto [it, inserted] = pools_.try_emplace(pool, Pool{device, 0});
  Pool& p = it->second;
  DeviceStats& d = dev(p.device);
  d.pool_reserved.sub(p.reserved);
  // The pool's high watermark, with the device's other figures as they stand: the peak's value is
  // the driver's, its instant only known to within the readings (docs/accounting.md, Pool).
  if (high > bytes) {
    const uint64_t others = d.pool_reserved.current;
    d.pool_reserved.peak = std::max(d.pool_reserved.peak, others + high);
    const uint64_t reserved_at_high = d.reserved.current - std::min(d.reserved.current, p.reserved) + high;
    if (reserved_at_high > d.reserved.peak) {
      d.reserved.peak = reserved_at_high;
      d.reserved_peak_ns = last_ns_;
    }
  }
  p.reserved = bytes;
  d.pool_reserved.add(bytes);
  refresh_totals(p.device, last_ns_);
}

std::vector<Accounting::PoolInfo> Accounting::pools() const {
  std::vector<PoolInfo> out;
  out.reserve(pools_.size());
  for (const auto& [handle, p] : pools_) out.push_back({handle, p.device, p.reserved});
  std::sort(out.begin(), out.end(), [](const PoolInfo& a, const PoolInfo& b) { return a.handle < b.handle; });
  return out;
}

void Accounting::on_pool_destroy(const Event& e) {
  Undo& u = begin_undo(e.thread_id, Op::PoolDestroy, e.object);
  auto it = pools_.find(e.object);
  if (it == pools_.end()) return;
  u.pool = it->second;
  device_ptrs_.erase_if(
      [&](uint64_t, const LiveAllocation& a) { return a.kind == Kind::Pool && a.pool == e.object; },
      [&](const LiveAllocation& a) {
        u.pool_allocs.push_back(a);
        ++dev(a.device).released_by_pool_destroy;
        remove_bytes(a);
      });
  dev(u.pool.device).pool_reserved.sub(u.pool.reserved);
  pools_.erase(it);
  refresh_totals(u.pool.device, last_ns_);
}

void Accounting::on_vmm_create(const Event& e) {
  if (e.result != 0) {
    record_failure(e, Kind::Vmm, e.size);
    return;
  }
  DeviceStats& d = dev(e.device);
  LiveAllocation a{e.address, e.size, e.timestamp_ns, 0, e.thread_id, e.stack_id, e.device, Kind::Vmm, e.api};
  handles_[e.address] = Handle{a, false, 0};
  ++d.kind(Kind::Vmm).allocs;
  ++d.alloc_count;
  d.vmm_physical.add(e.size);
  refresh_totals(e.device, e.timestamp_ns);
}

void Accounting::free_physical_if_unused(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end() || !it->second.released || it->second.mappings != 0) return;
  const LiveAllocation a = it->second.alloc;
  handles_.erase(it);
  dev(a.device).vmm_physical.sub(a.size);
  refresh_totals(a.device, last_ns_);
}

void Accounting::on_vmm_release(const Event& e) {
  Undo& u = begin_undo(e.thread_id, Op::VmmRelease, e.address);
  auto it = handles_.find(e.address);
  if (it == handles_.end() || it->second.released) {
    ++unknown_frees_;
    return;
  }
  u.found = true;
  u.alloc = it->second.alloc;
  it->second.released = true;
  DeviceStats& d = dev(u.alloc.device);
  ++d.kind(Kind::Vmm).frees;
  ++d.free_count;
  u.handle_freed = it->second.mappings == 0;
  free_physical_if_unused(e.address);
}

void Accounting::on_vmm_map(const Event& e) {
  if (e.result != 0) return;
  auto h = handles_.find(e.object);
  const int16_t device = h != handles_.end() ? h->second.alloc.device : e.device;
  if (h != handles_.end()) ++h->second.mappings;
  mappings_[e.address] = Mapping{e.size, e.object, device};
  dev(device).kind(Kind::Vmm).bytes.add(e.size);
  refresh_totals(device, e.timestamp_ns);
}

void Accounting::on_vmm_unmap(const Event& e) {
  Undo& u = begin_undo(e.thread_id, Op::VmmUnmap, e.address);
  const uint64_t end = e.address + e.size;
  for (auto it = mappings_.lower_bound(e.address); it != mappings_.end() && it->first < end;) {
    const Mapping m = it->second;
    u.mappings.emplace_back(it->first, m);
    it = mappings_.erase(it);
    dev(m.device).kind(Kind::Vmm).bytes.sub(m.size);
    auto h = handles_.find(m.handle);
    if (h != handles_.end()) {
      if (h->second.mappings > 0) --h->second.mappings;
      if (h->second.released && h->second.mappings == 0) u.freed_handles.push_back(h->second.alloc);
      free_physical_if_unused(m.handle);
    }
    refresh_totals(m.device, last_ns_);
  }
}

std::vector<LiveAllocation> Accounting::live_allocations() const {
  std::vector<LiveAllocation> out;
  out.reserve(device_ptrs_.size() + arrays_.size() + handles_.size() + pinned_.size());
  auto add = [&out](uint64_t, const LiveAllocation& a) { out.push_back(a); };
  device_ptrs_.for_each(add);
  arrays_.for_each(add);
  for (auto& [_, h] : handles_) out.push_back(h.alloc);
  pinned_.for_each(add);
  return out;
}

std::vector<LiveAllocation> Accounting::live_allocated(int device) const {
  std::vector<LiveAllocation> out;
  auto add = [&out, device](uint64_t, const LiveAllocation& a) {
    if (a.device == device && a.kind != Kind::Managed) out.push_back(a);
  };
  device_ptrs_.for_each(add);
  arrays_.for_each(add);
  for (const auto& [va, m] : mappings_) {
    if (m.device != device) continue;
    auto h = handles_.find(m.handle);
    LiveAllocation a = h != handles_.end() ? h->second.alloc : LiveAllocation{};
    a.address = va;
    a.size = m.size;
    a.device = m.device;
    a.kind = Kind::Vmm;
    out.push_back(a);
  }
  return out;
}

}  // namespace gmp
