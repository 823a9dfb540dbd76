// Exact memory accounting over the event stream (docs/design.md §Accounting). Pure logic: the collector
// feeds it live events, the tools feed it a trace to rebuild a summary. Peaks are maxima over the
// event order, never samples.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "address_map.h"
#include "event.h"
#include "figures.h"

namespace gmp {

class Accounting {
 public:
  Accounting() = default;
  Accounting(const Accounting&) = delete;  // by_ordinal_ points into this object's map
  Accounting& operator=(const Accounting&) = delete;

  void apply(const Event& e);
  // Every peak becomes the current value, reached at `at_ns` (event clock): the peaks from then on
  // are those of a window that starts there (the tools' --since).
  void reset_peaks(uint64_t at_ns);

  const std::map<int, DeviceStats>& devices() const { return devices_; }
  const Counter& host_pinned() const { return host_pinned_; }
  uint64_t host_pinned_allocs() const { return pinned_allocs_; }
  uint64_t host_pinned_frees() const { return pinned_frees_; }
  uint64_t unknown_frees() const { return unknown_frees_; }
  // Out-of-memory: every allocation call that returned CUDA_ERROR_OUT_OF_MEMORY, the bundles the
  // collector wrote for them, and the episodes that ended in a successful retry.
  struct OomCounts {
    uint64_t failures = 0, bundles_written = 0, recovered = 0;
  };
  const OomCounts& oom() const { return oom_; }
  // Alerts fired, by AlertType value (1 warning, 2 critical, 3 fragmentation, 4 growth).
  const std::array<uint64_t, 5>& alerts_fired() const { return alerts_; }
  uint64_t failed_releases() const { return failed_releases_; }
  uint64_t events() const { return events_; }
  uint64_t first_timestamp_ns() const { return first_ns_; }
  uint64_t last_timestamp_ns() const { return last_ns_; }
  const std::vector<FailedAllocation>& failed_allocations() const { return failed_; }

  // Every allocation still holding memory: device pointers, arrays, VMM physical handles, pinned.
  std::vector<LiveAllocation> live_allocations() const;
  // What a device's allocated figure counts, one entry each (docs/accounting.md): linear, pool and
  // array allocations, and VMM mappings (the mapped handle's allocation with the mapping's address
  // and size); not managed or pinned memory. Their sizes add up to allocated.current.
  std::vector<LiveAllocation> live_allocated(int device) const;
  // Tensors the framework still holds (kind None, api torch_caching_allocator).
  std::vector<LiveAllocation> live_tensors() const;
  using Segment = FrameworkSegment;
  // The framework's segments (mapped ranges of expandable ones), in address order.
  std::vector<Segment> framework_segments() const;
  // Device memory still allocated that is not the framework's cache (its segments, the VMM handles
  // mapped into them): live_allocations() less pinned memory and that cache, in the same order.
  std::vector<LiveAllocation> live_outside_framework() const;
  struct LiveTotals {
    uint64_t count = 0, bytes = 0;
  };
  // docs/accounting.md §Counts: linear, pool, array, managed, VMM handles, and tensors; not the
  // driver allocations that are a framework's segments: those are its cache.
  LiveTotals live_at_exit() const;
  // live_at_exit() by device, at any moment (the metrics file's live allocations). Not a copy of the
  // allocations: a walk of the tables, cheap enough for a periodic pass over millions of them.
  std::map<int, LiveTotals> live_by_device() const;
  LiveTotals cached_at_exit() const;  // the framework's segments still reserved
  // Every stream-ordered pool alive, by handle, with its device and reserved bytes (the watchdog's).
  struct PoolInfo {
    uint64_t handle;
    int16_t device;
    uint64_t reserved;
  };
  std::vector<PoolInfo> pools() const;
  // The bridge: whether it attached, the framework's version, why it refused (FrameworkAttach).
  struct FrameworkState {
    bool reported = false, attached = false;
    uint64_t version = 0;
    FrameworkRefusal refusal = FrameworkRefusal::None;
  };
  const FrameworkState& framework() const { return framework_; }
  // Every graph met, in order of its number (destroyed ones too).
  const std::vector<GraphStats>& graphs() const { return graphs_; }
  static constexpr size_t kMaxGraphsKept = 100000;

  static constexpr size_t kMaxFailedKept = 1000;

  // The whole state, as a trace segment's checkpoint (docs/trace-format.md §Checkpoints): a reader
  // that restores it and replays the segment's events gets exactly the figures of a replay from the
  // run's first event. The encoding is canonical (tables in key order), so equal states give equal
  // bytes. restore_checkpoint() is for a new Accounting; false, leaving it empty, when `data` is not
  // a checkpoint this version reads (truncated, corrupt, or of another version).
  std::string save_checkpoint() const;
  bool restore_checkpoint(const void* data, size_t size);

 private:
  // accounting_checkpoint.cpp: every member, in one order, for both directions.
  template <typename IO>
  void checkpoint_io(IO& io);
  void clear();
  struct Handle {
    LiveAllocation alloc;
    bool released = false;
    uint32_t mappings = 0;
  };
  struct Mapping {
    uint64_t size, handle;
    int16_t device;
  };
  struct Pool {
    int16_t device;
    uint64_t reserved;
  };
  // What a thread's last release removed, so a ReleaseFailed from that thread can put it back.
  struct Undo {
    Op op = Op::None;
    uint64_t address = 0;
    bool found = false;
    LiveAllocation alloc;
    std::vector<std::pair<uint64_t, Mapping>> mappings;
    std::vector<LiveAllocation> pool_allocs;     // PoolDestroy: the allocations it released
    std::vector<LiveAllocation> freed_handles;   // VmmUnmap: released handles it freed
    Pool pool{};
    bool handle_freed = false;
  };

  DeviceStats& dev(int d);
  AddressMap<LiveAllocation>& table_for(Kind k);
  Undo& begin_undo(uint32_t thread, Op op, uint64_t address);
  void on_alloc(const Event& e);
  void on_free(const Event& e);
  void on_release_failed(const Event& e);
  void on_pool_create(const Event& e);
  void on_pool_destroy(const Event& e);
  // The pool's reserved bytes as read; `high`, its high watermark since the last reading (0: not read),
  // makes the peaks exact where the pool grew and shrank between two readings.
  void set_pool_reserved(uint64_t pool, int16_t device, uint64_t bytes, uint64_t high = 0);
  void on_vmm_create(const Event& e);
  void on_vmm_release(const Event& e);
  void on_vmm_map(const Event& e);
  void on_vmm_unmap(const Event& e);
  void free_physical_if_unused(uint64_t handle);
  void add_bytes(const LiveAllocation& a);
  void remove_bytes(const LiveAllocation& a);
  void refresh_totals(int device, uint64_t ts);
  // graph_accounting.cpp
  void on_graph(const Event& e);
  GraphStats* graph_for(uint64_t handle, uint64_t capture_id, bool create);
  void on_graph_launch(const Event& e);
  void on_graph_memory(const Event& e);
  void record_failure(const Event& e, Kind kind, uint64_t size);
  // framework_accounting.cpp
  void on_framework(const Event& e);
  void on_framework_attach(const Event& e);
  void settle_free_request(const Event& e);
  uint64_t add_segment(int16_t device, uint64_t address, uint64_t size, uint64_t pool);
  uint64_t remove_segment(uint64_t address, uint64_t size);
  bool in_framework_segment(uint64_t address) const;
  // Calls f(const LiveAllocation&) for each allocation of live_outside_framework(), in its order.
  template <typename F>
  void for_each_live_outside_framework(F&& f) const;
  void refresh_outside(const Event& e);

  std::map<int, DeviceStats> devices_;
  std::array<DeviceStats*, 16> by_ordinal_{};  // devices_ without a tree walk, for the usual ordinals
  AddressMap<LiveAllocation> device_ptrs_;  // linear, pool, managed
  AddressMap<LiveAllocation> arrays_;
  AddressMap<LiveAllocation> pinned_;
  std::unordered_map<uint64_t, Handle> handles_;
  std::map<uint64_t, Mapping> mappings_;
  std::unordered_map<uint64_t, Pool> pools_;
  std::unordered_map<uint32_t, Undo> undo_;  // nodes are stable, so last_undo_ can point into it
  Undo* last_undo_ = nullptr;
  uint32_t last_undo_thread_ = 0;
  std::vector<FailedAllocation> failed_;
  AddressMap<LiveAllocation> tensors_;
  std::unordered_map<int, uint64_t> requested_;  // per device: a free requested by its last event
  std::map<uint64_t, Segment> segments_;  // by start address; ranges never overlap
  FrameworkState framework_;
  // Graphs: every one met (by number - 1), the live handles, executables and open captures.
  struct GraphExec {
    uint32_t graph = 0;  // number
    uint64_t flags = 0;
  };
  std::vector<GraphStats> graphs_;
  std::unordered_map<uint64_t, uint32_t> graph_numbers_;   // CUgraph handle -> number
  std::unordered_map<uint64_t, uint32_t> capture_graphs_;  // capture id -> number, while it captures
  std::unordered_map<uint64_t, GraphExec> graph_execs_;    // CUgraphExec handle -> its graph
  // Threads between a driver call and the framework event that explains it (a segment's cudaMalloc
  // and its SegmentAlloc): the outside-the-framework peak waits until they are paired.
  struct Unpaired {
    uint32_t thread;
    uint64_t timestamp_ns;
    int16_t device;
    bool driver_alloc;  // else a SegmentFree waiting for its cuMemFree
    uint64_t outside;   // the device's outside bytes just after the driver allocation
  };
  std::vector<Unpaired> unpaired_;
  Counter host_pinned_;
  uint64_t pinned_allocs_ = 0, pinned_frees_ = 0;
  uint64_t unknown_frees_ = 0, failed_releases_ = 0;
  OomCounts oom_;
  std::array<uint64_t, 5> alerts_{};
  uint64_t events_ = 0, first_ns_ = 0, last_ns_ = 0;
};

}  // namespace gmp
