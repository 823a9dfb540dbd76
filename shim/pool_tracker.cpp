#include "pool_tracker.h"

#include <algorithm>
#include <atomic>
#include <initializer_list>

#include "capture.h"
#include "record.h"

namespace gmp::shim::pools {
namespace {

struct KnownPool {
  std::atomic<uint64_t> handle{0};
  std::atomic<uint64_t> reserved{0};
  std::atomic<uint64_t> high{0};
  std::atomic<int> device{-1};
  // Bytes the pool can still hand out without growing, as of its last reading (reserved less used),
  // less every allocation since (frees are not added back: the figure only errs low). Negative:
  // unknown, or used up, and the next allocation reads the pool.
  alignas(64) std::atomic<int64_t> headroom{-1};
  // The driver counts a failed request's attempt in RESERVED_MEM_HIGH (seen on an H200: ~139 GiB
  // after a request of twice the device, nothing reserved): the high read just after a failure,
  // which says nothing until the program resets it below that.
  std::atomic<uint64_t> tainted_high{0};
};

constexpr int kMaxPools = 512;
KnownPool g_known[kMaxPools];
std::atomic<int> g_known_count{0};
std::atomic<uint64_t> g_current[kMaxDevices];

KnownPool* find_or_add(uint64_t handle, int device) {
  const int n = g_known_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_known[i].handle.load(std::memory_order_relaxed) == handle) return &g_known[i];
  }
  // Reuse a slot freed by forget(), else append. Races only produce a duplicate slot, which
  // refresh_all() tolerates (both read the same pool).
  for (int i = 0; i < n; ++i) {
    uint64_t expected = 0;
    if (g_known[i].handle.compare_exchange_strong(expected, handle)) {
      g_known[i].device.store(device, std::memory_order_relaxed);
      return &g_known[i];
    }
  }
  const int i = g_known_count.fetch_add(1, std::memory_order_acq_rel);
  if (i >= kMaxPools) {
    g_known_count.store(kMaxPools, std::memory_order_relaxed);
    return nullptr;
  }
  g_known[i].device.store(device, std::memory_order_relaxed);
  g_known[i].handle.store(handle, std::memory_order_release);
  return &g_known[i];
}

// The pool's attributes `attrs` into `out`, in one relaxed capture-mode scope (reading them is
// unsafe during a capture in global mode: capture.h); false when the driver cannot say.
bool driver_attributes(CUmemoryPool pool, std::initializer_list<CUmemPool_attribute> attrs, uint64_t* out) {
  auto get = GMP_REAL(cuMemPoolGetAttribute);
  if (pool == nullptr || get == nullptr) return false;
  capture::Relaxed relaxed;
  for (const CUmemPool_attribute a : attrs) {
    cuuint64_t v = 0;
    if (get(pool, a, &v) != CUDA_SUCCESS) return false;
    *out++ = v;
  }
  return true;
}

// RESERVED_MEM_CURRENT and RESERVED_MEM_HIGH.
bool driver_figures(CUmemoryPool pool, uint64_t* reserved, uint64_t* high) {
  uint64_t v[2];
  if (!driver_attributes(pool, {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH}, v)) return false;
  *reserved = v[0];
  *high = v[1];
  return true;
}

// Remembers `v` as the pool's last reading. Written only when it changed: most allocations leave the
// pool as it was, and a line every allocating thread writes would bounce between their cores.
void remember_reserved(KnownPool* k, uint64_t v) {
  if (k != nullptr && k->reserved.load(std::memory_order_relaxed) != v) k->reserved.store(v, std::memory_order_relaxed);
}

}  // namespace

std::optional<uint64_t> driver_reserved(CUmemoryPool pool) {
  uint64_t reserved = 0;
  if (!driver_attributes(pool, {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT}, &reserved)) return std::nullopt;
  return reserved;
}

CUmemoryPool current_pool(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  uint64_t p = g_current[device].load(std::memory_order_acquire);
  if (p == 0) {
    auto get = GMP_REAL(cuDeviceGetMemPool);
    CUmemoryPool pool = nullptr;
    if (get == nullptr || get(&pool, device) != CUDA_SUCCESS) return nullptr;
    p = reinterpret_cast<uint64_t>(pool);
    g_current[device].store(p, std::memory_order_release);
  }
  return reinterpret_cast<CUmemoryPool>(p);
}

void set_current_pool(int device, CUmemoryPool pool) {
  if (device >= 0 && device < kMaxDevices) g_current[device].store(reinterpret_cast<uint64_t>(pool));
}

uint64_t read_reserved(CUmemoryPool pool, int device) {
  const std::optional<uint64_t> reading = driver_reserved(pool);
  if (!reading) return 0;
  remember_reserved(find_or_add(reinterpret_cast<uint64_t>(pool), device), *reading);
  return *reading;
}

uint64_t failed_allocation(CUmemoryPool pool, int device) {
  uint64_t reserved = 0, high = 0;
  if (!driver_figures(pool, &reserved, &high)) return 0;
  if (KnownPool* k = find_or_add(reinterpret_cast<uint64_t>(pool), device)) {
    remember_reserved(k, reserved);
    if (high > reserved) k->tainted_high.store(high, std::memory_order_relaxed);
    k->headroom.store(-1, std::memory_order_relaxed);
  }
  return reserved;
}

uint64_t read_after_allocation(CUmemoryPool pool, int device, uint64_t size) {
  // The thread's last pool: most programs allocate from one pool per device.
  thread_local KnownPool* last = nullptr;
  const auto handle = reinterpret_cast<uint64_t>(pool);
  KnownPool* k = last != nullptr && last->handle.load(std::memory_order_relaxed) == handle
                     ? last
                     : (last = find_or_add(handle, device));
  // What the driver hands out for `size`, or more: pool blocks are at least 512-byte aligned.
  const auto taken = static_cast<int64_t>((size + 511) / 512 * 512);
  if (k != nullptr && k->headroom.fetch_sub(taken, std::memory_order_relaxed) >= taken) return kNoReading;
  uint64_t v[2];
  if (!driver_attributes(pool, {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT}, v)) {
    return kNoReading;
  }
  const uint64_t reserved = v[0], used = v[1];
  if (k != nullptr) {
    remember_reserved(k, reserved);
    if (k->high.load(std::memory_order_relaxed) < reserved) k->high.store(reserved, std::memory_order_relaxed);
    k->headroom.store(static_cast<int64_t>(reserved) - static_cast<int64_t>(std::min(used, reserved)),
                      std::memory_order_relaxed);
  }
  return reserved;
}

int known_device(CUmemoryPool pool) {
  const auto handle = reinterpret_cast<uint64_t>(pool);
  const int n = g_known_count.load(std::memory_order_acquire);
  for (int i = 0; i < n && i < kMaxPools; ++i) {
    if (g_known[i].handle.load(std::memory_order_relaxed) == handle) return g_known[i].device.load();
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    if (g_current[d].load(std::memory_order_relaxed) == handle) return d;
  }
  return -1;
}

void trimmed(CUmemoryPool pool) {
  const auto handle = reinterpret_cast<uint64_t>(pool);
  const int n = std::min(g_known_count.load(std::memory_order_acquire), kMaxPools);
  for (int i = 0; i < n; ++i) {
    if (g_known[i].handle.load(std::memory_order_relaxed) == handle) g_known[i].headroom.store(-1);
  }
}

// The high watermark a reading may use: 0 while it is still the one a failed request left.
uint64_t usable_high(KnownPool& k, uint64_t high) {
  const uint64_t tainted = k.tainted_high.load(std::memory_order_relaxed);
  if (tainted == 0) return high;
  if (high >= tainted) return 0;
  k.tainted_high.store(0, std::memory_order_relaxed);  // the program reset it: trusted again
  return high;
}

bool read_with_high(CUmemoryPool pool, int device, PoolReading* out) {
  trimmed(pool);  // a trim or a destruction follows or came before: the headroom is gone
  uint64_t reserved = 0, high = 0;
  if (!driver_figures(pool, &reserved, &high)) return false;
  const auto handle = reinterpret_cast<uint64_t>(pool);
  if (KnownPool* k = find_or_add(handle, device)) {
    high = usable_high(*k, high);
    k->reserved.store(reserved, std::memory_order_relaxed);
    k->high.store(high, std::memory_order_relaxed);
    if (device < 0) device = k->device.load(std::memory_order_relaxed);
  }
  *out = PoolReading{handle, device, reserved, high};
  return true;
}

size_t read_all(PoolReading* out, size_t max) {
  const int n = std::min(g_known_count.load(std::memory_order_acquire), kMaxPools);
  size_t written = 0;
  for (int i = 0; i < n && written < max; ++i) {
    KnownPool& k = g_known[i];
    const uint64_t handle = k.handle.load(std::memory_order_acquire);
    uint64_t reserved = 0, high = 0;
    if (handle == 0 || !driver_figures(reinterpret_cast<CUmemoryPool>(handle), &reserved, &high)) continue;
    high = usable_high(k, high);
    // Only what no record carries yet: the allocation path's readings and the refreshes store what
    // they recorded, so a pool that did not change since costs no event.
    if (reserved == k.reserved.load(std::memory_order_relaxed) && high <= k.high.load(std::memory_order_relaxed)) {
      continue;
    }
    k.reserved.store(reserved, std::memory_order_relaxed);
    k.high.store(std::max(high, k.high.load(std::memory_order_relaxed)), std::memory_order_relaxed);
    out[written++] = PoolReading{handle, k.device.load(std::memory_order_relaxed), reserved, high};
  }
  return written;
}

void forget(CUmemoryPool pool) {
  const auto handle = reinterpret_cast<uint64_t>(pool);
  const int n = g_known_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    uint64_t expected = handle;
    if (g_known[i].handle.compare_exchange_strong(expected, 0)) g_known[i].reserved.store(0);
  }
  for (auto& c : g_current) {
    uint64_t expected = handle;
    c.compare_exchange_strong(expected, 0);
  }
}

void refresh_all() {
  const int n = std::min(g_known_count.load(std::memory_order_acquire), kMaxPools);
  for (int i = 0; i < n; ++i) {
    const uint64_t handle = g_known[i].handle.load(std::memory_order_acquire);
    uint64_t now = 0, high = 0;
    if (handle == 0 || !driver_figures(reinterpret_cast<CUmemoryPool>(handle), &now, &high)) continue;
    high = usable_high(g_known[i], high);
    // A synchronisation can give memory back: what was known to be free may be gone.
    g_known[i].headroom.store(-1, std::memory_order_relaxed);
    const bool same_high = g_known[i].high.exchange(high, std::memory_order_relaxed) == high;
    if (g_known[i].reserved.exchange(now, std::memory_order_relaxed) == now && same_high) continue;
    const PoolReading r{handle, g_known[i].device.load(std::memory_order_relaxed), now, high};
    session_record(r.device, [&](Event& e) { e = pool_reserved_event(r, Api::Collector); });
  }
}

void reset() {
  for (auto& k : g_known) {
    k.handle.store(0);
    k.reserved.store(0);
  }
  g_known_count.store(0);
  for (auto& c : g_current) c.store(0);
}

}  // namespace gmp::shim::pools
