// What the running process can ask about itself (include/gpumemprof.h, docs/python.md): each
// device's figures, the counts, a peak window and the recent records (allocations, releases,
// alerts, cleanups), and the tensors by category (the collector's live TensorCategories). The
// collector thread is the only writer; readers are the application's threads, which must never wait
// on it: figures are published after each pass under a seqlock per device, records go into a fixed
// ring whose slots carry their own sequence number, and a reader that meets a slot being rewritten
// retries or skips it. No lock, no allocation on either side.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>

#define GPUMEMPROF_TYPES_ONLY
#include "../include/gpumemprof.h"
#undef GPUMEMPROF_TYPES_ONLY
#include "accounting.h"
#include "clock.h"
#include "ring.h"
#include "tensor_categories.h"

namespace gmp {

class LiveFigures {
 public:
  static constexpr size_t kRecords = 16384;  // recent records kept (a power of two)
  static constexpr int kDevices = 16;        // devices with published figures (ordinals 0-15)

  // The readers' side (any thread). False when the device has no figures yet.
  bool read_device(int device, gpumemprof_device_stats_t& out) const;
  void read_counts(gpumemprof_counts_t& out) const;
  // Records with a seq above `after_seq`, oldest first, at most `max`.
  size_t read_recent(uint64_t after_seq, gpumemprof_record_t* out, size_t max) const;
  // A new peak window from the events stamped from now on (event clock ticks).
  void request_reset() { reset_requested_.store(event_ticks(), std::memory_order_release); }
  uint64_t reset_requested() const { return reset_requested_.load(std::memory_order_acquire); }
  uint64_t reset_applied() const { return reset_applied_.load(std::memory_order_acquire); }

  // The collector's side. A session's collector starts from nothing (a forked child's too).
  void restart();
  struct Pass {
    uint64_t reset_ticks;  // the request pending when the pass began
    uint64_t claimed;      // the ring's claims then: every event stamped before the request is among them
  };
  Pass begin_pass(const Ring& ring) const;
  // Before and after the accounting and the categories take `e` (its time already in ns): the
  // window, the records; a new tensor peak is marked in `cats` (TensorCategories::mark_peak).
  void before(const Event& e, const Accounting& acc, TensorCategories& cats, const TickConverter& ticks);
  void after(const Event& e, const Accounting& acc, TensorCategories& cats);
  // The watchdog's cleanup, besides its event: the counts.
  void note_cleanup(uint64_t bytes);
  // End of a pass: a reset whose earlier events are all handled is applied; figures published.
  void end_pass(const Pass& pass, const Ring& ring, const Accounting& acc, TensorCategories& cats);

 private:
  struct Window {
    uint64_t allocated_peak = 0, reserved_peak = 0, tensor_peak = 0, framework_reserved_peak = 0;
    uint64_t bytes_allocated = 0, bytes_freed = 0, tensor_bytes_allocated = 0, tensor_bytes_freed = 0;
    uint64_t allocs = 0, frees = 0, tensor_allocs = 0, tensor_frees = 0;
  };
  // A device's four figures, before an event and after.
  struct Levels {
    uint64_t allocated = 0, reserved = 0, tensors = 0, framework_reserved = 0;
    bool operator==(const Levels&) const = default;
  };
  // The window a reset ended, and the levels at the reset: kept from one reset to the next.
  struct Closed {
    Levels at_reset;
    Window window;
    CategoryBytes categories_at_reset{}, categories_at_peak{};
  };
  static Levels levels(const DeviceStats& d);
  static constexpr size_t kStatsWords = sizeof(gpumemprof_device_stats_t) / 8;
  static constexpr size_t kCountWords = sizeof(gpumemprof_counts_t) / 8;
  static constexpr size_t kRecordWords = sizeof(gpumemprof_record_t) / 8;
  struct DeviceSlot {
    std::atomic<uint64_t> seq{0};  // odd while the collector rewrites the words
    std::atomic<uint64_t> words[kStatsWords];
  };
  struct RecordSlot {
    std::atomic<uint64_t> seq{0};  // the record's seq once written; 0 while being rewritten
    std::atomic<uint64_t> words[kRecordWords];
  };

  void apply_reset(const Accounting& acc, TensorCategories& cats);
  void record(const gpumemprof_record_t& r);
  void add_record(const Event& e, const DeviceStats& d, uint64_t type, uint64_t detail, uint64_t size, int64_t change);
  gpumemprof_device_stats_t figures(const DeviceStats& d, const Window& w, const Closed& closed,
                                    const CategoryBytes& categories) const;

  // Collector only.
  std::map<int, Window> windows_;
  std::map<int, Closed> closed_;
  uint64_t pending_ticks_ = 0;  // a reset not applied yet (event clock ticks), 0 when none
  uint64_t pending_ns_ = 0;     // ... and its time in ns
  uint64_t applied_ticks_ = 0;  // the last reset applied (reset_applied_ once published)
  Levels before_[kDevices];   // each device's levels before the event being handled
  bool before_synced_ = false;  // before_ follows the accounting (after() keeps it so)
  bool dirty_ = false;
  uint64_t last_ns_ = 0, next_seq_ = 1, cleanups_ = 0, cleanup_bytes_ = 0;

  std::atomic<uint64_t> reset_requested_{0};
  std::atomic<uint64_t> reset_applied_{0};
  DeviceSlot devices_[kDevices];
  std::atomic<uint64_t> counts_seq_{0};
  std::atomic<uint64_t> counts_[kCountWords];
  RecordSlot records_[kRecords];
};

// The process's one instance: the shim's query functions read what the session's collector writes.
LiveFigures& live_figures();

}  // namespace gmp
