#include "live_figures.h"
#include "records.h"
#include "seam.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace gmp {
namespace {

static_assert(std::size(gpumemprof_device_stats_t{}.tensor_category) == kTensorCategoryCount);
static_assert(GPUMEMPROF_CATEGORY_UNKNOWN == static_cast<int>(TensorCategory::Unknown) &&
              GPUMEMPROF_CATEGORY_PARAMETERS == static_cast<int>(TensorCategory::Parameters) &&
              GPUMEMPROF_CATEGORY_GRADIENTS == static_cast<int>(TensorCategory::Gradients) &&
              GPUMEMPROF_CATEGORY_OPTIMIZER_STATE == static_cast<int>(TensorCategory::OptimizerState) &&
              GPUMEMPROF_CATEGORY_ACTIVATIONS == static_cast<int>(TensorCategory::Activations) &&
              GPUMEMPROF_CATEGORY_TEMPORARIES == static_cast<int>(TensorCategory::Temporaries) &&
              GPUMEMPROF_CATEGORY_KV_CACHE == static_cast<int>(TensorCategory::KvCache) &&
              GPUMEMPROF_CATEGORY_OTHER == static_cast<int>(TensorCategory::Other));

// The seqlocks' words are atomics stored with release and loaded with acquire (plain moves on x86,
// and no fences, which ThreadSanitizer cannot check): a reader that sees a word of a rewrite also
// sees the odd or changed sequence number the rewrite began with, and retries; no access is a
// data race.
template <size_t N>
void store_words(std::atomic<uint64_t> (&dst)[N], const void* src) {
  uint64_t w[N];
  std::memcpy(w, src, sizeof w);
  for (size_t i = 0; i < N; ++i) dst[i].store(w[i], std::memory_order_release);
}

template <size_t N>
void load_words(const std::atomic<uint64_t> (&src)[N], void* dst) {
  uint64_t w[N];
  for (size_t i = 0; i < N; ++i) w[i] = src[i].load(std::memory_order_acquire);
  std::memcpy(dst, w, sizeof w);
}

template <size_t N>
void publish(std::atomic<uint64_t>& seq, std::atomic<uint64_t> (&words)[N], const void* src) {
  const uint64_t s = seq.load(std::memory_order_relaxed);
  seq.store(s + 1, std::memory_order_relaxed);
  store_words(words, src);
  seq.store(s + 2, std::memory_order_release);
}

// False when the words were never published. The collector rewrites them in well under a
// microsecond; a reader that keeps meeting a rewrite (the collector preempted in the middle) yields.
template <size_t N>
bool read_consistent(const std::atomic<uint64_t>& seq, const std::atomic<uint64_t> (&words)[N], void* dst) {
  for (unsigned attempt = 0;; ++attempt) {
    const uint64_t s1 = seq.load(std::memory_order_acquire);
    if (s1 == 0) return false;
    if ((s1 & 1) == 0) {
      load_words(words, dst);
      if (seq.load(std::memory_order_relaxed) == s1) return true;
    }
    if (attempt >= 64) sched_yield();
  }
}

}  // namespace

LiveFigures& live_figures() {
  static LiveFigures* figures = new LiveFigures;  // never destroyed: read from exit handlers too
  return *figures;
}

// The seam's reads (seam.h), for the C API.
bool live_device_stats(int device, gpumemprof_device_stats& out) { return live_figures().read_device(device, out); }
void live_counts(gpumemprof_counts& out) { live_figures().read_counts(out); }
size_t live_recent(uint64_t after_seq, gpumemprof_record* out, size_t max) {
  return live_figures().read_recent(after_seq, out, max);
}
void live_reset_peaks() { live_figures().request_reset(); }

LiveFigures::Levels LiveFigures::levels(const DeviceStats& d) {
  return {d.allocated.current, d.reserved.current, d.framework.allocated.current, d.framework.reserved.current};
}

void LiveFigures::restart() {
  windows_.clear();
  closed_.clear();
  pending_ticks_ = pending_ns_ = applied_ticks_ = 0;
  dirty_ = false;
  last_ns_ = cleanups_ = cleanup_bytes_ = 0;
  next_seq_ = 1;
  for (auto& b : before_) b = Levels{};
  before_synced_ = false;
  reset_requested_.store(0, std::memory_order_relaxed);
  reset_applied_.store(0, std::memory_order_relaxed);
  for (auto& d : devices_) d.seq.store(0, std::memory_order_release);
  counts_seq_.store(0, std::memory_order_release);
  for (auto& r : records_) r.seq.store(0, std::memory_order_release);
}

LiveFigures::Pass LiveFigures::begin_pass(const Ring& ring) const {
  Pass p;
  p.reset_ticks = reset_requested_.load(std::memory_order_acquire);  // before the claims: see Pass
  p.claimed = ring.claimed();
  return p;
}

void LiveFigures::before(const Event& e, const Accounting& acc, TensorCategories& cats, const TickConverter& ticks) {
  const uint64_t requested = reset_requested_.load(std::memory_order_acquire);
  if (requested != 0 && requested != pending_ticks_ && requested != applied_ticks_) {
    pending_ticks_ = requested;
    pending_ns_ = ticks.to_ns(requested);
  }
  // The events reach us in time order: the first one stamped at or after the reset opens the window.
  if (pending_ticks_ != 0 && e.timestamp_ns >= pending_ns_) apply_reset(acc, cats);
  // after() leaves before_ equal to the accounting (only Accounting::apply, between the two, changes
  // it): the levels are read here only once after a restart, not on every event.
  if (before_synced_) return;
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0 && ordinal < kDevices) before_[ordinal] = levels(d);
  }
  before_synced_ = true;
}

void LiveFigures::after(const Event& e, const Accounting& acc, TensorCategories& cats) {
  last_ns_ = e.timestamp_ns;
  dirty_ = true;
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal < 0 || ordinal >= kDevices) continue;
    const Levels now = levels(d), was = before_[ordinal];
    if (now == was) continue;
    before_[ordinal] = now;
    Window& w = windows_[ordinal];
    w.allocated_peak = std::max(w.allocated_peak, now.allocated);
    w.reserved_peak = std::max(w.reserved_peak, now.reserved);
    if (now.tensors > w.tensor_peak) {
      w.tensor_peak = now.tensors;
      cats.mark_peak(ordinal);
    }
    w.framework_reserved_peak = std::max(w.framework_reserved_peak, now.framework_reserved);
    const auto change = static_cast<int64_t>(now.allocated - was.allocated);
    if (change > 0) {
      w.bytes_allocated += static_cast<uint64_t>(change);
      ++w.allocs;
      add_record(e, d, GPUMEMPROF_ALLOCATION, static_cast<uint64_t>(e.kind), static_cast<uint64_t>(change), change);
    } else if (change < 0) {
      w.bytes_freed += static_cast<uint64_t>(-change);
      ++w.frees;
      add_record(e, d, GPUMEMPROF_DEALLOCATION, static_cast<uint64_t>(e.kind), static_cast<uint64_t>(-change),
                 change);
    }
    const auto tensors = static_cast<int64_t>(now.tensors - was.tensors);
    if (tensors > 0) {
      w.tensor_bytes_allocated += static_cast<uint64_t>(tensors);
      ++w.tensor_allocs;
      add_record(e, d, GPUMEMPROF_ALLOCATION, 0, static_cast<uint64_t>(tensors), tensors);
    } else if (tensors < 0) {
      w.tensor_bytes_freed += static_cast<uint64_t>(-tensors);
      ++w.tensor_frees;
      add_record(e, d, GPUMEMPROF_DEALLOCATION, 0, static_cast<uint64_t>(-tensors), tensors);
    }
  }
  if (e.op != Op::Alert && e.op != Op::Cleanup && !(e.op == Op::Alloc && e.result == kOutOfMemory)) return;
  const auto found = acc.devices().find(e.device);
  if (found == acc.devices().end()) return;
  const DeviceStats& d = found->second;
  if (e.op == Op::Alloc && e.result == kOutOfMemory) {
    add_record(e, d, GPUMEMPROF_OOM, static_cast<uint64_t>(e.kind), e.size, 0);
  } else if (e.op == Op::Alert) {
    const auto a = AlertRecord::from_event(e);
    add_record(e, d, a.fired ? GPUMEMPROF_ALERT : GPUMEMPROF_ALERT_CLEARED, AlertRecord::type_index(e), a.threshold, 0);
  } else if (e.op == Op::Cleanup) {
    const auto c = CleanupRecord::from_event(e);
    add_record(e, d, GPUMEMPROF_CLEANUP, c.pools_trimmed, c.bytes_released, 0);
    ++cleanups_;
    cleanup_bytes_ += c.bytes_released;
  }
}

void LiveFigures::add_record(const Event& e, const DeviceStats& d, uint64_t type, uint64_t detail, uint64_t size,
                             int64_t change) {
  gpumemprof_record_t r{};
  r.seq = next_seq_++;
  r.timestamp_ns = e.timestamp_ns;
  r.device = d.device;
  r.type = type;
  r.detail = detail;
  r.size = size;
  r.address = e.op == Op::Alert || e.op == Op::Cleanup ? 0 : e.address;
  r.change = change;
  const Levels l = levels(d);
  r.allocated = l.allocated;
  r.reserved = l.reserved;
  r.tensor_allocated = l.tensors;
  r.framework_reserved = l.framework_reserved;
  RecordSlot& slot = records_[r.seq & (kRecords - 1)];
  slot.seq.store(0, std::memory_order_relaxed);
  store_words(slot.words, &r);
  slot.seq.store(r.seq, std::memory_order_release);
}

void LiveFigures::apply_reset(const Accounting& acc, TensorCategories& cats) {
  // The accounting holds every event stamped before the reset and none after: the window ends here.
  closed_.clear();
  for (const auto& [ordinal, d] : acc.devices()) {
    closed_[ordinal] = {levels(d), windows_[ordinal], cats.now(ordinal), cats.at_peak(ordinal)};
    cats.mark_peak(ordinal);  // the new window's peak is the level now
  }
  windows_.clear();
  for (const auto& [ordinal, d] : acc.devices()) {
    Window& w = windows_[ordinal];
    const Levels l = levels(d);
    w.allocated_peak = l.allocated;
    w.reserved_peak = l.reserved;
    w.tensor_peak = l.tensors;
    w.framework_reserved_peak = l.framework_reserved;
  }
  applied_ticks_ = pending_ticks_;  // published by end_pass, with the window
  pending_ticks_ = 0;
  dirty_ = true;
}

void LiveFigures::end_pass(const Pass& pass, const Ring& ring, const Accounting& acc, TensorCategories& cats) {
  // No event stamped after the reset came in this pass, but every one stamped before it has been
  // handled: the window opens now, empty.
  if (pass.reset_ticks != 0 && pass.reset_ticks != applied_ticks_ && ring.consumed() >= pass.claimed) {
    pending_ticks_ = pass.reset_ticks;
    apply_reset(acc, cats);
  }
  if (!dirty_) return;
  dirty_ = false;
  gpumemprof_counts_t c{};
  c.events = acc.events();
  c.records = next_seq_ - 1;
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0 && ordinal < kDevices) {
      c.device_ordinals[c.devices++] = ordinal;
      const gpumemprof_device_stats_t s = figures(d, windows_[ordinal], closed_[ordinal], cats.now(ordinal));
      publish(devices_[ordinal].seq, devices_[ordinal].words, &s);
    }
    c.alloc_count += d.alloc_count;
    c.free_count += d.free_count;
    c.failed_alloc_count += d.failed_alloc_count;
  }
  for (size_t t = 1; t < std::size(c.alerts_fired); ++t) c.alerts_fired[t] = acc.alerts_fired()[t];
  c.cleanups = cleanups_;
  c.cleanup_bytes = cleanup_bytes_;
  publish(counts_seq_, counts_, &c);
  // After the figures: a reader that sees the reset applied sees its window.
  reset_applied_.store(applied_ticks_, std::memory_order_release);
}

gpumemprof_device_stats_t LiveFigures::figures(const DeviceStats& d, const Window& w, const Closed& closed,
                                               const CategoryBytes& categories) const {
  gpumemprof_device_stats_t s{};
  s.device = d.device;
  s.total_bytes = d.total_bytes;
  s.as_of_ns = last_ns_;
  s.allocated = d.allocated.current;
  s.allocated_peak = d.allocated.peak;
  s.reserved = d.reserved.current;
  s.reserved_peak = d.reserved.peak;
  for (size_t k = 1; k < std::size(s.kind_allocated); ++k) {
    s.kind_allocated[k] = d.by_kind[k].bytes.current;
    s.kind_allocated_peak[k] = d.by_kind[k].bytes.peak;
  }
  s.alloc_count = d.alloc_count;
  s.free_count = d.free_count;
  s.failed_alloc_count = d.failed_alloc_count;
  const FrameworkStats& f = d.framework;
  s.framework_attached = f.attached ? 1 : 0;
  s.tensor_allocated = f.allocated.current;
  s.tensor_allocated_peak = f.allocated.peak;
  s.framework_reserved = f.reserved.current;
  s.framework_reserved_peak = f.reserved.peak;
  s.framework_cached = f.cached();
  s.tensor_alloc_count = f.tensor_allocs;
  s.tensor_free_count = f.tensor_frees;
  s.window_allocated_peak = w.allocated_peak;
  s.window_reserved_peak = w.reserved_peak;
  s.window_tensor_allocated_peak = w.tensor_peak;
  s.window_framework_reserved_peak = w.framework_reserved_peak;
  s.window_bytes_allocated = w.bytes_allocated;
  s.window_bytes_freed = w.bytes_freed;
  s.window_tensor_bytes_allocated = w.tensor_bytes_allocated;
  s.window_tensor_bytes_freed = w.tensor_bytes_freed;
  s.window_alloc_count = w.allocs;
  s.window_free_count = w.frees;
  s.window_tensor_alloc_count = w.tensor_allocs;
  s.window_tensor_free_count = w.tensor_frees;
  const Window& c = closed.window;
  s.reset_allocated = closed.at_reset.allocated;
  s.reset_reserved = closed.at_reset.reserved;
  s.reset_tensor_allocated = closed.at_reset.tensors;
  s.reset_framework_reserved = closed.at_reset.framework_reserved;
  s.closed_allocated_peak = c.allocated_peak;
  s.closed_reserved_peak = c.reserved_peak;
  s.closed_tensor_allocated_peak = c.tensor_peak;
  s.closed_framework_reserved_peak = c.framework_reserved_peak;
  s.closed_bytes_allocated = c.bytes_allocated;
  s.closed_bytes_freed = c.bytes_freed;
  s.closed_tensor_bytes_allocated = c.tensor_bytes_allocated;
  s.closed_tensor_bytes_freed = c.tensor_bytes_freed;
  s.closed_alloc_count = c.allocs;
  s.closed_free_count = c.frees;
  s.closed_tensor_alloc_count = c.tensor_allocs;
  s.closed_tensor_free_count = c.tensor_frees;
  std::copy(categories.begin(), categories.end(), s.tensor_category);
  std::copy(closed.categories_at_reset.begin(), closed.categories_at_reset.end(), s.reset_tensor_category);
  std::copy(closed.categories_at_peak.begin(), closed.categories_at_peak.end(), s.closed_tensor_peak_category);
  return s;
}

bool LiveFigures::read_device(int device, gpumemprof_device_stats_t& out) const {
  if (device < 0 || device >= kDevices) return false;
  return read_consistent(devices_[device].seq, devices_[device].words, &out);
}

void LiveFigures::read_counts(gpumemprof_counts_t& out) const {
  if (!read_consistent(counts_seq_, counts_, &out)) out = gpumemprof_counts_t{};
}

size_t LiveFigures::read_recent(uint64_t after_seq, gpumemprof_record_t* out, size_t max) const {
  gpumemprof_counts_t c;
  read_counts(c);
  // Records after the last published count may be half written: read up to it. Older than the
  // ring holds are gone; a slot rewritten while read is skipped (its seq changed).
  const uint64_t last = c.records;
  if (after_seq >= last) return 0;  // nothing newer; and after_seq + 1 would wrap at UINT64_MAX
  uint64_t seq = std::max(after_seq + 1, last >= kRecords ? last - kRecords + 1 : 1);
  size_t n = 0;
  for (; seq <= last && n < max; ++seq) {
    const RecordSlot& slot = records_[seq & (kRecords - 1)];
    if (slot.seq.load(std::memory_order_acquire) != seq) continue;
    gpumemprof_record_t r;
    load_words(slot.words, &r);
    if (slot.seq.load(std::memory_order_relaxed) != seq) continue;
    out[n++] = r;
  }
  return n;
}

}  // namespace gmp
