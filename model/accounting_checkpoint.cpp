// The accounting state as a checkpoint at the start of a trace segment (docs/trace-format.md
// §Checkpoints), written by the collector and read by the tools.
//
// Encoding, version 3: the four bytes "GMPC", a u32 version, then every member of Accounting in the
// order of Accounting::checkpoint_io() below. Version 2 (eight kinds: before the runtime kind) and
// version 1 (before CUDA graphs: seven kinds, no graph figures or tables) are still read, so traces written before stay readable from any segment. Scalars are little-endian in their own width (bool
// and the enums as their underlying integer, checked on reading); a table is a u64 count followed
// by its entries in key order (so equal states encode to equal bytes); an entry is its key then
// its fields. The one function walks the state for both directions, so the writer and the reader
// cannot disagree on an order. Anything that does not parse to the last byte is refused.
#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "accounting.h"

namespace gmp {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are written in the machine's byte order");

constexpr char kMagic[4] = {'G', 'M', 'P', 'C'};
constexpr uint32_t kVersion = 3;
constexpr uint32_t kVersionBeforeRuntime = 2;
constexpr uint32_t kVersionBeforeGraphs = 1;
constexpr size_t kKindsBeforeGraphs = 7;
constexpr size_t kKindsBeforeRuntime = 8;

// Saving: reads each field and appends it.
class Out {
 public:
  static constexpr bool kLoading = false;
  uint32_t version = kVersion;
  template <typename T>
  void scalar(const T& v) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_scalar_v<T>);
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename E>
  void enumeration(E& v, E) { scalar(v); }
  void flag(bool& b) { scalar(static_cast<uint8_t>(b ? 1 : 0)); }
  void count(uint64_t& n, size_t) { scalar(n); }
  std::string bytes;
};

// Loading: fills each field from the bytes, or marks the input bad (fields then read as zero).
class In {
 public:
  static constexpr bool kLoading = true;
  In(const uint8_t* p, size_t n, uint32_t v) : version(v), p_(p), left_(n) {}
  uint32_t version;
  template <typename T>
  void scalar(T& v) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_scalar_v<T>);
    if (!ok || left_ < sizeof v) {
      ok = false;
      v = T{};
      return;
    }
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    left_ -= sizeof v;
  }
  // An enum read from a damaged file may hold any value; the accounting indexes tables with some.
  template <typename E>
  void enumeration(E& v, E end) {
    std::underlying_type_t<E> raw{};
    scalar(raw);
    if (raw >= static_cast<std::underlying_type_t<E>>(end)) ok = false;
    v = ok ? static_cast<E>(raw) : E{};
  }
  void flag(bool& b) {
    uint8_t raw = 0;
    scalar(raw);
    if (raw > 1) ok = false;
    b = raw == 1;
  }
  // A count whose entries (each at least `min_bytes`) cannot fit in what is left is corrupt: refused
  // before anything is allocated for it.
  void count(uint64_t& n, size_t min_bytes) {
    scalar(n);
    if (ok && n > left_ / std::max<size_t>(min_bytes, 1)) ok = false;
    if (!ok) n = 0;
  }
  bool finished() const { return ok && left_ == 0; }
  bool ok = true;

 private:
  const uint8_t* p_;
  size_t left_;
};

constexpr Op kOpEnd = static_cast<Op>(kOpCount);
constexpr Kind kKindEnd = static_cast<Kind>(kKindCount);
constexpr FrameworkRefusal kRefusalEnd = static_cast<FrameworkRefusal>(static_cast<int>(FrameworkRefusal::Disabled) + 1);

// A new field in one of these structs must be added below: the sizes catch a forgotten one.
static_assert(sizeof(Counter) == 16 && sizeof(KindStats) == 32 && sizeof(LiveAllocation) == 48 &&
              sizeof(FrameworkStats) == 184 && sizeof(DeviceStats) == 680 && sizeof(FailedAllocation) == 40 &&
              sizeof(GraphStats) == 128 && sizeof(GraphStats::Node) == 24);

template <typename IO>
void io_counter(IO& io, Counter& c) {
  io.scalar(c.current);
  io.scalar(c.peak);
}

template <typename IO>
void io_live(IO& io, LiveAllocation& a) {
  io.scalar(a.address);
  io.scalar(a.size);
  io.scalar(a.timestamp_ns);
  io.scalar(a.pool);
  io.scalar(a.thread_id);
  io.scalar(a.stack_id);
  io.scalar(a.device);
  io.enumeration(a.kind, kKindEnd);
  io.enumeration(a.api, Api::Count_);
  io.flag(a.free_requested);
  io.flag(a.pending_counted);
}
constexpr size_t kLiveBytes = 8 * 4 + 4 * 2 + 2 + 1 + 2 + 1 + 1;

template <typename IO>
void io_framework(IO& io, FrameworkStats& f) {
  io.flag(f.attached);
  for (Counter* c : {&f.allocated, &f.reserved, &f.pending_free, &f.outside}) io_counter(io, *c);
  for (uint64_t* v : {&f.allocated_peak_ns, &f.reserved_peak_ns, &f.outside_peak_ns, &f.tensor_allocs,
                      &f.tensor_frees, &f.segment_allocs, &f.segment_frees, &f.ooms}) {
    io.scalar(*v);
  }
  if (io.version == kVersionBeforeGraphs) return;
  io_table<IO, uint64_t, FrameworkStats::Pool>(io, f.private_pools, 40, [](IO& o, FrameworkStats::Pool& p) {
    io_counter(o, p.reserved);
    io_counter(o, p.allocated);
  });
}

template <typename IO>
void io_device(IO& io, DeviceStats& d) {
  io.scalar(d.device);
  io.scalar(d.total_bytes);
  io_counter(io, d.allocated);
  io_counter(io, d.reserved);
  io.scalar(d.allocated_peak_ns);
  io.scalar(d.reserved_peak_ns);
  const size_t kinds = io.version == kVersionBeforeGraphs    ? kKindsBeforeGraphs
                       : io.version == kVersionBeforeRuntime ? kKindsBeforeRuntime
                                                             : d.by_kind.size();
  for (size_t i = 0; i < kinds; ++i) {
    KindStats& k = d.by_kind[i];
    io_counter(io, k.bytes);
    io.scalar(k.allocs);
    io.scalar(k.frees);
  }
  io_counter(io, d.pool_reserved);
  io_counter(io, d.vmm_physical);
  if (io.version != kVersionBeforeGraphs) {
    io_counter(io, d.graph_reserved);
    io_counter(io, d.graph_used);
  }
  for (uint64_t* v : {&d.alloc_count, &d.free_count, &d.failed_alloc_count, &d.released_by_pool_destroy,
                      &d.nvml.samples, &d.nvml.device_used, &d.nvml.device_total, &d.nvml.process_used,
                      &d.nvml.process_used_peak}) {
    io.scalar(*v);
  }
  io.flag(d.nvml.process_known);
  io_framework(io, d.framework);
}

template <typename IO>
void io_failed(IO& io, FailedAllocation& f) {
  io.scalar(f.timestamp_ns);
  io.scalar(f.size);
  io.scalar(f.stream);
  io.scalar(f.thread_id);
  io.scalar(f.device);
  io.enumeration(f.kind, kKindEnd);
  io.enumeration(f.api, Api::Count_);
  io.scalar(f.result);
}

template <typename IO, typename T, typename F>
void io_vector(IO& io, std::vector<T>& v, size_t min_bytes, F&& item) {
  uint64_t n = v.size();
  io.count(n, min_bytes);
  if constexpr (IO::kLoading) v.assign(n, T{});
  for (T& x : v) item(io, x);
}

// A keyed table (std::map, std::unordered_map or AddressMap), saved in key order.
template <typename IO, typename K, typename V, typename Table, typename F>
void io_table(IO& io, Table& table, size_t min_bytes, F&& item) {
  if constexpr (IO::kLoading) {
    uint64_t n = 0;
    io.count(n, min_bytes);
    for (uint64_t i = 0; i < n && io.ok; ++i) {
      K key{};
      V value{};
      io.scalar(key);
      item(io, value);
      if (!io.ok) break;
      if constexpr (requires { table.insert_or_assign(key, value); }) table.insert_or_assign(key, value);
      else table[key] = value;
    }
  } else {
    std::vector<std::pair<K, V>> entries;
    if constexpr (requires { table.for_each([](uint64_t, const V&) {}); }) {
      table.for_each([&](uint64_t k, const V& v) { entries.emplace_back(k, v); });
    } else {
      for (const auto& [k, v] : table) entries.emplace_back(k, v);
    }
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    uint64_t n = entries.size();
    io.count(n, min_bytes);
    for (auto& [k, v] : entries) {
      io.scalar(k);
      item(io, v);
    }
  }
}

}  // namespace

template <typename IO>
void Accounting::checkpoint_io(IO& io) {
  io_table<IO, int, DeviceStats>(io, devices_, 8, [](IO& o, DeviceStats& d) { io_device(o, d); });
  for (AddressMap<LiveAllocation>* t : {&device_ptrs_, &arrays_, &pinned_, &tensors_}) {
    io_table<IO, uint64_t, LiveAllocation>(io, *t, kLiveBytes, [](IO& o, LiveAllocation& a) { io_live(o, a); });
  }
  io_table<IO, uint64_t, Handle>(io, handles_, kLiveBytes, [](IO& o, Handle& h) {
    io_live(o, h.alloc);
    o.flag(h.released);
    o.scalar(h.mappings);
  });
  auto mapping = [](IO& o, Mapping& m) {
    o.scalar(m.size);
    o.scalar(m.handle);
    o.scalar(m.device);
  };
  io_table<IO, uint64_t, Mapping>(io, mappings_, 26, mapping);
  io_table<IO, uint64_t, Pool>(io, pools_, 10, [](IO& o, Pool& p) {
    o.scalar(p.device);
    o.scalar(p.reserved);
  });
  // A release whose driver call is refused after the checkpoint is undone from this.
  io_table<IO, uint32_t, Undo>(io, undo_, 4, [&](IO& o, Undo& u) {
    o.enumeration(u.op, kOpEnd);
    o.scalar(u.address);
    o.flag(u.found);
    io_live(o, u.alloc);
    io_vector(o, u.mappings, 34, [&](IO& oo, std::pair<uint64_t, Mapping>& m) {
      oo.scalar(m.first);
      mapping(oo, m.second);
    });
    for (auto* list : {&u.pool_allocs, &u.freed_handles}) {
      io_vector(o, *list, kLiveBytes, [](IO& oo, LiveAllocation& a) { io_live(oo, a); });
    }
    o.scalar(u.pool.device);
    o.scalar(u.pool.reserved);
    o.flag(u.handle_freed);
  });
  io_vector(io, failed_, 30, [](IO& o, FailedAllocation& f) { io_failed(o, f); });
  io_table<IO, int, uint64_t>(io, requested_, 12, [](IO& o, uint64_t& v) { o.scalar(v); });
  io_table<IO, uint64_t, Segment>(io, segments_, 26, [](IO& o, Segment& s) {
    o.scalar(s.address);
    o.scalar(s.size);
    o.scalar(s.device);
    if (o.version != kVersionBeforeGraphs) o.scalar(s.pool);
  });
  io.flag(framework_.reported);
  io.flag(framework_.attached);
  io.scalar(framework_.version);
  io.enumeration(framework_.refusal, kRefusalEnd);
  io_vector(io, unpaired_, 31, [](IO& o, Unpaired& u) {
    o.scalar(u.thread);
    o.scalar(u.timestamp_ns);
    o.scalar(u.device);
    o.flag(u.driver_alloc);
    o.scalar(u.outside);
  });
  io_counter(io, host_pinned_);
  for (uint64_t* v : {&pinned_allocs_, &pinned_frees_, &unknown_frees_, &failed_releases_, &oom_.failures,
                      &oom_.bundles_written, &oom_.recovered, &events_, &first_ns_, &last_ns_}) {
    io.scalar(*v);
  }
  for (uint64_t& a : alerts_) io.scalar(a);
  if (io.version == kVersionBeforeGraphs) return;
  io_vector(io, graphs_, 60, [](IO& o, GraphStats& g) {
    o.scalar(g.number);
    o.scalar(g.device);
    o.flag(g.captured);
    o.scalar(g.capture_mode);
    o.scalar(g.stack_id);
    o.scalar(g.capture_stream);
    io_vector(o, g.allocs, 22, [](IO& oo, GraphStats::Node& n) {
      oo.scalar(n.address);
      oo.scalar(n.size);
      oo.scalar(n.stack_id);
      oo.scalar(n.device);
    });
    io_vector(o, g.frees, 8, [](IO& oo, uint64_t& a) { oo.scalar(a); });
    for (uint64_t* v : {&g.launches, &g.uploads, &g.instantiations, &g.failed_launches}) o.scalar(*v);
    io_vector(o, g.streams, 8, [](IO& oo, uint64_t& s) { oo.scalar(s); });
  });
  // A graph number names an entry of graphs_: a damaged one must not index past it.
  const auto number_ok = [this](uint32_t n) { return n >= 1 && n <= graphs_.size(); };
  for (auto* table : {&graph_numbers_, &capture_graphs_}) {
    io_table<IO, uint64_t, uint32_t>(io, *table, 12, [&](IO& o, uint32_t& n) {
      o.scalar(n);
      if constexpr (IO::kLoading) {
        if (!number_ok(n)) o.ok = false;
      }
    });
  }
  io_table<IO, uint64_t, GraphExec>(io, graph_execs_, 20, [&](IO& o, GraphExec& x) {
    o.scalar(x.graph);
    o.scalar(x.flags);
    if constexpr (IO::kLoading) {
      if (!number_ok(x.graph)) o.ok = false;
    }
  });
}

std::string Accounting::save_checkpoint() const {
  Out out;
  out.bytes.append(kMagic, sizeof kMagic);
  out.scalar(kVersion);
  // Out only reads the fields; the one walker serves both directions.
  const_cast<Accounting*>(this)->checkpoint_io(out);
  return std::move(out.bytes);
}

bool Accounting::restore_checkpoint(const void* data, size_t size) {
  clear();
  const auto* p = static_cast<const uint8_t*>(data);
  if (size < sizeof kMagic + sizeof kVersion || std::memcmp(p, kMagic, sizeof kMagic) != 0) return false;
  uint32_t version = 0;
  std::memcpy(&version, p + sizeof kMagic, sizeof version);
  if (version != kVersion && version != kVersionBeforeRuntime && version != kVersionBeforeGraphs) return false;
  In in(p + sizeof kMagic + sizeof version, size - sizeof kMagic - sizeof version, version);
  checkpoint_io(in);
  if (!in.finished()) {
    clear();
    return false;
  }
  by_ordinal_.fill(nullptr);
  for (auto& [ordinal, d] : devices_) {
    d.device = ordinal;  // the key is the truth; a damaged field must not disagree with it
    if (ordinal >= 0 && ordinal < static_cast<int>(by_ordinal_.size())) by_ordinal_[ordinal] = &d;
  }
  return true;
}

void Accounting::clear() {
  devices_.clear();
  by_ordinal_.fill(nullptr);
  for (AddressMap<LiveAllocation>* t : {&device_ptrs_, &arrays_, &pinned_, &tensors_}) *t = {};
  handles_.clear();
  mappings_.clear();
  pools_.clear();
  undo_.clear();
  last_undo_ = nullptr;
  last_undo_thread_ = 0;
  failed_.clear();
  requested_.clear();
  segments_.clear();
  framework_ = {};
  graphs_.clear();
  graph_numbers_.clear();
  capture_graphs_.clear();
  graph_execs_.clear();
  unpaired_.clear();
  host_pinned_ = {};
  pinned_allocs_ = pinned_frees_ = unknown_frees_ = failed_releases_ = 0;
  oom_ = {};
  alerts_ = {};
  events_ = first_ns_ = last_ns_ = 0;
}

}  // namespace gmp
