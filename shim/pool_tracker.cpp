#include "pool_tracker.h"

#include <atomic>

#include "../collector/device_table.h"
#include "capture.h"
#include "record.h"

namespace gmp::shim::pools {
namespace {

struct KnownPool {
  std::atomic<uint64_t> handle{0};
  std::atomic<uint64_t> reserved{0};
  std::atomic<int> device{-1};
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

}  // namespace

std::optional<uint64_t> driver_reserved(CUmemoryPool pool) {
  auto get = GMP_REAL(cuMemPoolGetAttribute);
  cuuint64_t v = 0;
  capture::Relaxed relaxed;  // unsafe during a capture in global mode (capture.h)
  if (pool == nullptr || get == nullptr || get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  return v;
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
  const auto handle = reinterpret_cast<uint64_t>(pool);
  const std::optional<uint64_t> reading = driver_reserved(pool);
  if (!reading) return 0;
  const uint64_t v = *reading;
  // Written only when it changed: most allocations leave the pool as it was, and a line every
  // allocating thread writes would bounce between their cores.
  KnownPool* k = find_or_add(handle, device);
  if (k != nullptr && k->reserved.load(std::memory_order_relaxed) != v) k->reserved.store(v, std::memory_order_relaxed);
  return v;
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
  const int n = g_known_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const uint64_t handle = g_known[i].handle.load(std::memory_order_acquire);
    const std::optional<uint64_t> reading = driver_reserved(reinterpret_cast<CUmemoryPool>(handle));
    if (!reading) continue;
    const uint64_t now = *reading;
    if (g_known[i].reserved.exchange(now, std::memory_order_relaxed) == now) continue;
    session_record(g_known[i].device.load(std::memory_order_relaxed), [&](Event& e) {
      e.op = Op::PoolReserved;
      e.api = Api::Collector;
      e.kind = Kind::Pool;
      e.object = handle;
      e.value = now;
    });
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
