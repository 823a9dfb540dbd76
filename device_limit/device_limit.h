// GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md): each limited device behaves, within the process,
// like a GPU of that size. The shim keeps, per device, the process's device bytes as the driver
// counts them (linear and pitched allocations, arrays and VMM physical memory in an atomic count;
// pools' reserved bytes read from the driver; the context and modules from NVML's figure for the
// process), decides on the calling thread, and answers an allocation that would pass the limit with
// CUDA_ERROR_OUT_OF_MEMORY, as the smaller device would. Memory queries report the limited size.
//
// Without a limit every wrapper pays one predictable branch: on() reads one byte.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "../shim/pool_tracker.h"

namespace gmp::shim::limit {

enum class State : uint8_t { Unknown, Off, On };
extern std::atomic<State> g_state;
bool resolve();  // the first call: reads GPUMEMPROF_DEVICE_LIMIT

inline bool on() {
  const State s = g_state.load(std::memory_order_relaxed);
  return s != State::Off && (s == State::On || resolve());
}

// What the limit tracks by handle, so that a release gives back what its allocation took.
enum class Table { Linear, Array };

// Holds the device's decisions for the caller's own (unlocked when the device has no limit): each
// admission and each pool growth is decided alone, so concurrent threads neither pass the limit
// together nor refuse what fits.
std::unique_lock<std::mutex> decide_alone(int device);

// Counts `bytes` on `device` if they fit under its limit; else records the refusal and returns false.
// `charged`: the driver already holds them (an allocation checked after the call).
bool admit(int device, uint64_t bytes, bool charged);
void unadmit(int device, uint64_t bytes);
void keep(Table t, uint64_t key, int device, uint64_t bytes);
// Before a release: takes the handle's bytes out of the count; give_back() if the driver refused.
struct Taken {
  int device = -1;
  uint64_t bytes = 0;
};
Taken take(Table t, uint64_t key);
void give_back(Table t, uint64_t key, Taken taken);

// A linear allocation of known size: counted before the driver call, so a refusal costs nothing.
template <typename Call>
CUresult linear(int device, CUdeviceptr* dptr, uint64_t bytes, Call&& call) {
  if (!admit(device, bytes, false)) {
    if (dptr != nullptr) *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult r = call();
  if (r == CUDA_SUCCESS && dptr != nullptr) keep(Table::Linear, *dptr, device, bytes);
  else unadmit(device, bytes);
  return r;
}

// An allocation whose size only the driver's answer gives (pitched memory, arrays): counted after
// it; one past the limit is released again through `undo` and answered as out of memory.
template <typename Undo>
CUresult created(CUresult r, Table t, uint64_t key, int device, uint64_t bytes, Undo&& undo) {
  if (r != CUDA_SUCCESS) return r;
  if (admit(device, bytes, true)) {
    keep(t, key, device, bytes);
    return r;
  }
  undo();
  return CUDA_ERROR_OUT_OF_MEMORY;
}

// A release of something the limit may count: taken out before the driver call (another thread
// may get the address the moment the driver frees it), given back if the driver refuses.
template <typename Call>
CUresult release(Table t, uint64_t key, Call&& call) {
  const Taken taken = take(t, key);
  const CUresult r = call();
  if (r != CUDA_SUCCESS) give_back(t, key, taken);
  return r;
}

// Stream-ordered allocation: whether the pool grew shows only after the call (the driver's free
// lists decide), so the pool's reserved bytes are read before and after. A growth past the limit
// is undone: the allocation is freed on its stream and the pool trimmed back to what it held.
inline uint64_t pool_reserved(CUmemoryPool pool) { return pools::driver_reserved(pool).value_or(0); }
using FreeAsync = CUresult (*)(CUdeviceptr, CUstream);
CUresult pool_grown(CUmemoryPool pool, int device, uint64_t before, CUdeviceptr* dptr, CUstream stream,
                    FreeAsync free_async);
template <typename Call>
CUresult pool(CUmemoryPool pool, int device, CUdeviceptr* dptr, CUstream stream, FreeAsync free_async, Call&& call) {
  const auto alone = decide_alone(device);
  const uint64_t before = pool_reserved(pool);
  const CUresult r = call();
  return r == CUDA_SUCCESS ? pool_grown(pool, device, before, dptr, stream, free_async) : r;
}

// VMM: physical memory counts from cuMemCreate until the handle is released and its last mapping
// is gone.
void vmm_created(CUmemGenericAllocationHandle handle, int device, uint64_t bytes);
template <typename Call>
CUresult vmm_create(int device, CUmemGenericAllocationHandle* handle, uint64_t bytes, Call&& call) {
  if (!admit(device, bytes, false)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult r = call();
  if (r == CUDA_SUCCESS && handle != nullptr) vmm_created(*handle, device, bytes);
  else unadmit(device, bytes);
  return r;
}
// After a successful cuMemMap, cuMemRelease, cuMemUnmap.
void vmm_mapped(CUdeviceptr va, CUmemGenericAllocationHandle handle);
void vmm_released(CUmemGenericAllocationHandle handle);
void vmm_unmapped(CUdeviceptr va, size_t size);

// The wrapper of an NVML memory query `symbol` that `handle` resolves, while a limit is set; else nullptr.
void* nvml_substitute(void* handle, const char* symbol);

}  // namespace gmp::shim::limit
