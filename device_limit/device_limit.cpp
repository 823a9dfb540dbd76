// GPUMEMPROF_DEVICE_LIMIT: the counts, the decisions, the context from NVML, and the memory queries
// that report the limited size (cuMemGetInfo, cuDeviceTotalMem, NVML's memory info). See
// device_limit.h and docs/device-limit.md.
#include "device_limit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "../collector/seam.h"
#include "../shim/capture.h"
#include "../shim/export.h"
#include "../shim/nvml.h"
#include "../shim/record.h"
#include "bytes_text.h"
#include "device_limit_spec.h"

namespace gmp::shim::limit {

std::atomic<State> g_state{State::Unknown};

namespace {

const std::optional<DeviceLimitSpec>& spec() {
  // Malformed values were reported by the configuration's one line (collector/config.cpp).
  static const std::optional<DeviceLimitSpec> s = [] {
    const char* text = std::getenv("GPUMEMPROF_DEVICE_LIMIT");
    return text != nullptr && session_enabled() ? parse_device_limit(text) : std::nullopt;
  }();
  return s;
}

// --- per device ---

struct Device {
  std::atomic<int> setup{0};  // 0 not yet, 1 limited, 2 not limited
  uint64_t limit = 0;
  std::atomic<uint64_t> counted{0};  // linear, pitched, arrays, VMM physical
  std::atomic<uint64_t> context{0};  // NVML's figure for the process less what is counted
  std::atomic<bool> measured{false};
  // Decisions on the device, one at a time: a pool's growth shows only between two reads around the
  // driver call, and another thread's growth (or admission) in between would be taken for this
  // one's, or hide it.
  std::mutex deciding;
};
Device g_devices[kMaxDevices];
std::mutex g_setup_mu;

int set_up(int device) {
  std::lock_guard<std::mutex> lock(g_setup_mu);
  Device& d = g_devices[device];
  if (const int s = d.setup.load(std::memory_order_acquire); s != 0) return s;
  const uint64_t want = spec() ? spec()->for_device(device) : 0;
  int state = 2;
  if (want != 0) {
    auto total_of = GMP_REAL(cuDeviceTotalMem_v2);
    size_t total = 0;
    if (total_of == nullptr || total_of(&total, device) != CUDA_SUCCESS) return 2;  // asked again later
    if (want <= total) {
      d.limit = want;
      state = 1;
    } else if (session_get() != nullptr) {
      log_warn(
          fmt::format("GPUMEMPROF_DEVICE_LIMIT: {} is more than device {} has ({}); device {} runs without a limit",
                      bytes_text(want), device, bytes_text(total), device));
    }
  }
  d.setup.store(state, std::memory_order_release);
  return state;
}

// The device's limit, 0 when it has none.
uint64_t limit_of(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  const int s = g_devices[device].setup.load(std::memory_order_acquire);
  return (s != 0 ? s : set_up(device)) == 1 ? g_devices[device].limit : 0;
}

// --- pools: every pool allocated from under a limit, read live (the driver shrinks them at
// synchronisations, which nothing here needs to follow) ---

struct KnownPool {
  std::atomic<uint64_t> handle{0};
  std::atomic<int> device{-1};
};
constexpr int kMaxPools = 256;
KnownPool g_pools[kMaxPools];
std::atomic<int> g_pool_count{0};
std::mutex g_pools_mu;

void note_pool(CUmemoryPool pool, int device) {
  const auto h = reinterpret_cast<uint64_t>(pool);
  const int n = g_pool_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_pools[i].handle.load(std::memory_order_relaxed) == h) {
      // A destroyed pool's handle may come back for a pool of another device.
      if (g_pools[i].device.load(std::memory_order_relaxed) != device) g_pools[i].device.store(device);
      return;
    }
  }
  std::lock_guard<std::mutex> lock(g_pools_mu);
  const int m = g_pool_count.load(std::memory_order_relaxed);
  if (m == kMaxPools) return;
  g_pools[m].device.store(device, std::memory_order_relaxed);
  g_pools[m].handle.store(h, std::memory_order_relaxed);
  g_pool_count.store(m + 1, std::memory_order_release);
}

uint64_t pools_bytes(int device) {
  uint64_t sum = 0;
  const int n = g_pool_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_pools[i].device.load(std::memory_order_relaxed) != device) continue;
    sum += pool_reserved(reinterpret_cast<CUmemoryPool>(g_pools[i].handle.load(std::memory_order_relaxed)));
  }
  return sum;
}

// --- the figures ---

// Counted bytes, pools and context: the process's device memory as the driver holds it.
uint64_t process_bytes(int device) {
  const Device& d = g_devices[device];
  return d.counted.load(std::memory_order_relaxed) + pools_bytes(device) + d.context.load(std::memory_order_relaxed);
}

void record_limit(int device, uint64_t context, bool refused, uint64_t before, uint64_t bytes) {
  session_record(device, [&](Event& e) {
    DeviceLimitRecord{g_devices[device].limit, context, refused, before, bytes}.to_event(e);
    e.api = Api::Collector;
  });
}

void* nvml_handle(int device) {
  if (void* h = nvml::known_device(device); h != nullptr || nvml::library().get_handle == nullptr) return h;
  auto pci_of = GMP_REAL(cuDeviceGetPCIBusId);
  char pci[32];
  if (pci_of == nullptr || pci_of(pci, sizeof pci, device) != CUDA_SUCCESS) return nullptr;
  return nvml::device(device, pci);
}

// Re-reads the context from NVML: the process's figure less what the driver holds of the counted
// bytes, the count corrected by `uncharged`: bytes counted that the driver has not been asked for yet
// (negative: bytes the driver holds that are not counted yet). Kept as it was when NVML does not name
// the process.
void measure(int device, int64_t uncharged) {
  Device& d = g_devices[device];
  const bool first = !d.measured.exchange(true);
  void* h = nvml_handle(device);
  const uint64_t used = h != nullptr ? nvml::process_usage(h, getpid()) : kUnknownUsage;
  uint64_t context = d.context.load(std::memory_order_relaxed);
  if (used != kUnknownUsage) {
    const uint64_t ours = d.counted.load(std::memory_order_relaxed) - uncharged + pools_bytes(device);
    context = used > ours ? used - ours : 0;
  }
  if (d.context.exchange(context) != context || first) record_limit(device, context, false, 0, 0);
}

bool fits(int device, uint64_t limit) { return process_bytes(device) <= limit; }

// Within the last eighth of the limit the context is read again before an allocation is allowed:
// modules load lazily (a training step's backward kernels load at its first backward, tens of MB on
// an H200), so the figure measured at the first allocation can be short by then.
bool clear_of_limit(int device, uint64_t limit) { return process_bytes(device) <= limit - limit / 8; }

void refuse(int device, uint64_t bytes, uint64_t before) {
  record_limit(device, g_devices[device].context.load(std::memory_order_relaxed), true, before, bytes);
}

// --- what the limit counts by handle ---

struct Tables {
  std::mutex mu;
  std::unordered_map<uint64_t, Taken> by_key[2];
  struct Physical {
    int device;
    uint64_t bytes;
    int mappings;
    bool released;
  };
  std::unordered_map<CUmemGenericAllocationHandle, Physical> physical;
  std::unordered_map<CUdeviceptr, CUmemGenericAllocationHandle> mappings;
};
Tables& tables() {
  static Tables* t = new Tables;  // never destroyed: frees come from exit handlers
  return *t;
}

// A physical handle goes once it is released and unmapped. Holds tables().mu.
void settle(std::unordered_map<CUmemGenericAllocationHandle, Tables::Physical>::iterator it) {
  if (!it->second.released || it->second.mappings > 0) return;
  unadmit(it->second.device, it->second.bytes);
  tables().physical.erase(it);
}

}  // namespace

bool resolve() {
  const State s = spec() ? State::On : State::Off;
  g_state.store(s, std::memory_order_relaxed);
  return s == State::On;
}

std::unique_lock<std::mutex> decide_alone(int device) {
  if (limit_of(device) == 0) return {};
  return std::unique_lock<std::mutex>(g_devices[device].deciding);
}

bool admit(int device, uint64_t bytes, bool charged) {
  const uint64_t limit = limit_of(device);
  if (limit == 0) return true;
  Device& d = g_devices[device];
  const std::lock_guard<std::mutex> alone(d.deciding);
  const auto signed_bytes = static_cast<int64_t>(bytes);
  if (!d.measured.load(std::memory_order_relaxed)) measure(device, charged ? -signed_bytes : 0);
  if (bytes > limit) {
    refuse(device, bytes, process_bytes(device));
    return false;
  }
  d.counted.fetch_add(bytes, std::memory_order_relaxed);
  if (clear_of_limit(device, limit)) return true;
  // Near the limit: the context may have grown since it was measured.
  measure(device, charged ? 0 : signed_bytes);
  if (fits(device, limit)) return true;
  d.counted.fetch_sub(bytes, std::memory_order_relaxed);
  refuse(device, bytes, process_bytes(device));
  return false;
}

void unadmit(int device, uint64_t bytes) {
  if (limit_of(device) != 0) g_devices[device].counted.fetch_sub(bytes, std::memory_order_relaxed);
}

void keep(Table t, uint64_t key, int device, uint64_t bytes) {
  if (limit_of(device) == 0) return;
  std::lock_guard<std::mutex> lock(tables().mu);
  tables().by_key[static_cast<int>(t)][key] = Taken{device, bytes};
}

Taken take(Table t, uint64_t key) {
  std::lock_guard<std::mutex> lock(tables().mu);
  auto& table = tables().by_key[static_cast<int>(t)];
  auto it = table.find(key);
  if (it == table.end()) return {};
  const Taken taken = it->second;
  table.erase(it);
  unadmit(taken.device, taken.bytes);
  return taken;
}

void give_back(Table t, uint64_t key, Taken taken) {
  if (taken.device < 0) return;
  g_devices[taken.device].counted.fetch_add(taken.bytes, std::memory_order_relaxed);
  keep(t, key, taken.device, taken.bytes);
}

CUresult pool_grown(CUmemoryPool pool, int device, uint64_t before, CUdeviceptr* dptr, CUstream stream,
                    FreeAsync free_async) {
  const uint64_t limit = limit_of(device);
  if (limit == 0 || pool == nullptr) return CUDA_SUCCESS;
  note_pool(pool, device);
  const uint64_t after = pool_reserved(pool);
  if (after <= before) return CUDA_SUCCESS;
  if (!g_devices[device].measured.load(std::memory_order_relaxed) || !clear_of_limit(device, limit)) measure(device, 0);
  if (fits(device, limit)) return CUDA_SUCCESS;
  const uint64_t growth = after - before;
  refuse(device, growth, process_bytes(device) - growth);
  // Undone as a smaller device would never have done it: the block goes back on its stream and the
  // pool is trimmed to what it held. A block the stream has not reached yet cannot be released
  // until it does, hence the synchronisation, paid only here.
  free_async(*dptr, stream);
  auto trim = GMP_REAL(cuMemPoolTrimTo);
  auto sync = GMP_REAL(cuStreamSynchronize);
  capture::Relaxed relaxed;  // unsafe calls during another thread's capture (capture.h)
  pools::trimmed(pool);
  if (trim != nullptr) {
    trim(pool, before);
    if (pool_reserved(pool) > before && sync != nullptr && sync(stream) == CUDA_SUCCESS) trim(pool, before);
  }
  *dptr = 0;
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void vmm_created(CUmemGenericAllocationHandle handle, int device, uint64_t bytes) {
  if (limit_of(device) == 0) return;
  std::lock_guard<std::mutex> lock(tables().mu);
  tables().physical[handle] = {device, bytes, 0, false};
}

void vmm_mapped(CUdeviceptr va, CUmemGenericAllocationHandle handle) {
  std::lock_guard<std::mutex> lock(tables().mu);
  auto it = tables().physical.find(handle);
  if (it == tables().physical.end()) return;
  ++it->second.mappings;
  tables().mappings[va] = handle;
}

void vmm_released(CUmemGenericAllocationHandle handle) {
  std::lock_guard<std::mutex> lock(tables().mu);
  auto it = tables().physical.find(handle);
  if (it == tables().physical.end()) return;
  it->second.released = true;
  settle(it);
}

void vmm_unmapped(CUdeviceptr va, size_t size) {
  std::lock_guard<std::mutex> lock(tables().mu);
  auto& maps = tables().mappings;
  // One cuMemUnmap removes every mapping that starts inside its range.
  for (auto m = maps.begin(); m != maps.end();) {
    if (m->first < va || m->first - va >= size) {
      ++m;
      continue;
    }
    auto it = tables().physical.find(m->second);
    if (it != tables().physical.end()) {
      --it->second.mappings;
      settle(it);
    }
    m = maps.erase(m);
  }
}

namespace {

// The limited figures of a memory query: the total is the limit, the free memory what is left of
// it, and never more than the real device has free.
template <typename T>
void shrink(int device, T* free, T* total, bool remeasure) {
  const uint64_t limit = limit_of(device);
  if (limit == 0 || free == nullptr || total == nullptr) return;
  if (remeasure) measure(device, 0);
  const uint64_t used = process_bytes(device);
  const uint64_t left = std::min<uint64_t>(*free, limit > used ? limit - used : 0);
  constexpr uint64_t kMax = std::numeric_limits<T>::max();  // the 32-bit legacy ABIs
  *total = static_cast<T>(std::min(limit, kMax));
  *free = static_cast<T>(std::min(left, kMax));
}

template <typename T>
void shrink_total(int device, T* bytes) {
  const uint64_t limit = limit_of(device);
  if (limit != 0 && bytes != nullptr) *bytes = static_cast<T>(std::min<uint64_t>(limit, std::numeric_limits<T>::max()));
}

// The CUDA device of an NVML handle, among the limited devices; -1 for any other.
int cuda_device_of(void* handle) {
  for (int dev = 0; dev < kMaxDevices; ++dev) {
    if (g_devices[dev].setup.load(std::memory_order_acquire) == 1 && nvml_handle(dev) == handle) return dev;
  }
  return -1;
}

}  // namespace

}  // namespace gmp::shim::limit

using namespace gmp::shim;
using namespace gmp::shim::limit;

namespace {

// A memory query forwarded to the library, its answer then made the limited device's by `limit`.
template <auto kMissing, typename Real, typename Limit, typename... Args>
auto query(Real real, Limit&& limit, Args... args) -> decltype(real(args...)) {
  if (real == nullptr) return kMissing;
  const auto r = real(args...);
  if (r == 0 && on()) limit();
  return r;
}

}  // namespace

GMP_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return query<CUDA_ERROR_NOT_INITIALIZED>(
      GMP_REAL(cuMemGetInfo_v2), [&] { shrink(current_device(), free, total, true); }, free, total);
}

// The 32-bit ABIs that cuda.h now maps to the _v2 functions keep their own exported names.
extern "C" __attribute__((visibility("default"))) CUresult gmp_cuMemGetInfo_v1(unsigned int* free, unsigned int* total)
    __asm__("cuMemGetInfo");
CUresult gmp_cuMemGetInfo_v1(unsigned int* free, unsigned int* total) {
  return query<CUDA_ERROR_NOT_INITIALIZED>(
      reinterpret_cast<CUresult (*)(unsigned int*, unsigned int*)>(gmp::shim::real(Entry::cuMemGetInfo)),
      [&] { shrink(current_device(), free, total, true); }, free, total);
}

GMP_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return query<CUDA_ERROR_NOT_INITIALIZED>(GMP_REAL(cuDeviceTotalMem_v2), [&] { shrink_total(dev, bytes); }, bytes,
                                           dev);
}

extern "C" __attribute__((visibility("default"))) CUresult gmp_cuDeviceTotalMem_v1(unsigned int* bytes, CUdevice dev)
    __asm__("cuDeviceTotalMem");
CUresult gmp_cuDeviceTotalMem_v1(unsigned int* bytes, CUdevice dev) {
  return query<CUDA_ERROR_NOT_INITIALIZED>(
      reinterpret_cast<CUresult (*)(unsigned int*, CUdevice)>(gmp::shim::real(Entry::cuDeviceTotalMem)),
      [&] { shrink_total(dev, bytes); }, bytes, dev);
}

// NVML: the process's own queries agree with the driver's. The NVML context figure is not
// re-measured here: monitoring code polls this query, and each re-measure lists the device's processes.
GMP_EXPORT int nvmlDeviceGetMemoryInfo(void* device, nvml::Memory* m) {
  return query<nvml::kFunctionNotFound>(nvml::library().memory_info, [&] {
    if (const int dev = cuda_device_of(device); dev >= 0 && m != nullptr) {
      shrink(dev, &m->free, &m->total, false);
      m->used = m->total - m->free;
    }
  }, device, m);
}

GMP_EXPORT int nvmlDeviceGetMemoryInfo_v2(void* device, nvml::MemoryV2* m) {
  return query<nvml::kFunctionNotFound>(nvml::library().memory_info_v2, [&] {
    if (const int dev = cuda_device_of(device); dev >= 0 && m != nullptr) {
      shrink(dev, &m->free, &m->total, false);
      m->reserved = std::min(m->reserved, m->total - m->free);
      m->used = m->total - m->free - m->reserved;
    }
  }, device, m);
}

void* gmp::shim::limit::nvml_substitute(void* handle, const char* symbol) {
  if (symbol == nullptr || std::strncmp(symbol, "nvmlDeviceGetMemoryInfo", 23) != 0 || !on()) return nullptr;
  if (real_dlsym()(handle, symbol) == nullptr) return nullptr;
  if (std::strcmp(symbol + 23, "") == 0) return reinterpret_cast<void*>(&nvmlDeviceGetMemoryInfo);
  if (std::strcmp(symbol + 23, "_v2") == 0) return reinterpret_cast<void*>(&nvmlDeviceGetMemoryInfo_v2);
  return nullptr;
}
