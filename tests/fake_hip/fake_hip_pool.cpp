// The fake HIP runtime's stream-ordered pools, as ROCclr's: a pool miss takes a whole HSA block of
// the request's size, a freed block is reused whole for a request it exceeds by at most an eighth,
// and free blocks go back to HSA at synchronisation (down to the release threshold), at
// hipMemPoolTrimTo, at destruction, and when an allocation would otherwise fail. Rules in README.md.
#include <algorithm>

#include "fake_hip_state.h"

namespace fakehip {

uint64_t Pool::reserved() const {
  uint64_t r = 0;
  for (const auto& [_, b] : blocks) r += b.size;
  return r;
}

uint64_t Pool::used() const {
  uint64_t u = 0;
  for (const auto& [_, b] : blocks) u += b.used;
  return u;
}

void release_free_blocks_locked(Pool* p, uint64_t keep) {
  // Highest addresses first: a deterministic order the tests can predict.
  for (auto it = p->blocks.rbegin(); it != p->blocks.rend() && p->reserved() > keep;) {
    if (it->second.used != 0) {
      ++it;
      continue;
    }
    hsa_amd_memory_pool_free(reinterpret_cast<void*>(it->first));
    it = decltype(it)(p->blocks.erase(std::next(it).base()));
  }
}

void synchronise_pools_locked() {
  for (Pool* p : state().pools) release_free_blocks_locked(p, p->release_threshold);
}

bool pool_free_locked(uint64_t address) {
  for (Pool* p : state().pools) {
    auto it = p->blocks.find(address);
    if (it != p->blocks.end() && it->second.used != 0) {
      it->second.used = 0;
      return true;
    }
  }
  return false;
}

}  // namespace fakehip

using namespace fakehip;

namespace {

bool known(Pool* p) { return p != nullptr && state().pools.contains(p); }

int stream_device_locked(hipStream_t stream) {
  if (stream == nullptr) return current_device();
  auto* st = reinterpret_cast<Stream*>(stream);
  return state().streams.contains(st) ? st->device : -1;
}

void note_highs(Pool* p) {
  p->reserved_high = std::max(p->reserved_high, p->reserved());
  p->used_high = std::max(p->used_high, p->used());
}

hipError_t pool_alloc_locked(Pool* p, void** ptr, uint64_t size) {
  // Reuse: the smallest free block that fits within an eighth.
  auto best = p->blocks.end();
  for (auto it = p->blocks.begin(); it != p->blocks.end(); ++it) {
    const PoolBlock& b = it->second;
    if (b.used == 0 && b.size >= size && b.size - size <= size / 8 && (best == p->blocks.end() || b.size < best->second.size)) {
      best = it;
    }
  }
  if (best == p->blocks.end()) {
    void* block = nullptr;
    hsa_status_t r = hsa_amd_memory_pool_allocate(vram_pool(p->device, false), size, 0, &block);
    if (r == HSA_STATUS_ERROR_OUT_OF_RESOURCES) {
      // Memory pressure: every pool of the device gives its free blocks back, then one retry.
      for (Pool* q : state().pools) {
        if (q->device == p->device) release_free_blocks_locked(q, 0);
      }
      r = hsa_amd_memory_pool_allocate(vram_pool(p->device, false), size, 0, &block);
    }
    if (r != HSA_STATUS_SUCCESS) return r == HSA_STATUS_ERROR_OUT_OF_RESOURCES ? hipErrorOutOfMemory : hipErrorInvalidValue;
    best = p->blocks.emplace(reinterpret_cast<uint64_t>(block), PoolBlock{round_up(size, 4096), 0}).first;
  }
  best->second.used = size;
  note_highs(p);
  *ptr = reinterpret_cast<void*>(best->first);
  return hipSuccess;
}

hipError_t alloc_async(void** ptr, size_t size, Pool* pool, hipStream_t stream) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  *ptr = nullptr;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  const int device = stream_device_locked(stream);
  if (device < 0) return hipErrorInvalidHandle;
  if (pool == nullptr) pool = s.current_pool[device];
  if (!known(pool)) return hipErrorInvalidValue;
  if (size == 0) return hipSuccess;
  return pool_alloc_locked(pool, ptr, size);
}

// A device's current or default pool.
hipError_t device_pool(hipMemPool_t* pool, int device, bool default_pool) {
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (pool == nullptr) return hipErrorInvalidValue;
  if (device < 0 || device >= s.devices) return hipErrorInvalidDevice;
  *pool = reinterpret_cast<hipMemPool_t>(default_pool ? s.default_pool[device] : s.current_pool[device]);
  return hipSuccess;
}

}  // namespace

extern "C" {

hipError_t hipMallocAsync(void** ptr, size_t size, hipStream_t stream) { return alloc_async(ptr, size, nullptr, stream); }

hipError_t hipMallocFromPoolAsync(void** ptr, size_t size, hipMemPool_t pool, hipStream_t stream) {
  if (pool == nullptr) return hipErrorInvalidValue;
  return alloc_async(ptr, size, reinterpret_cast<Pool*>(pool), stream);
}

hipError_t hipFreeAsync(void* ptr, hipStream_t) {
  Lock lock(state().mu);
  ensure_init_locked();
  if (ptr == nullptr) return hipSuccess;
  return pool_free_locked(reinterpret_cast<uint64_t>(ptr)) ? hipSuccess : hipErrorInvalidValue;
}

hipError_t hipMemPoolCreate(hipMemPool_t* pool, const hipMemPoolProps* props) {
  if (pool == nullptr || props == nullptr || props->location.type != hipMemLocationTypeDevice) return hipErrorInvalidValue;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (props->location.id < 0 || props->location.id >= s.devices) return hipErrorInvalidDevice;
  auto* p = new Pool{props->location.id, false};
  s.pools.insert(p);
  *pool = reinterpret_cast<hipMemPool_t>(p);
  return hipSuccess;
}

hipError_t hipMemPoolDestroy(hipMemPool_t pool) {
  State& s = state();
  Lock lock(s.mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  if (!known(p) || p->is_default) return hipErrorInvalidValue;
  for (const auto& [address, _] : p->blocks) hsa_amd_memory_pool_free(reinterpret_cast<void*>(address));
  if (s.current_pool[p->device] == p) s.current_pool[p->device] = s.default_pool[p->device];
  s.pools.erase(p);
  delete p;
  return hipSuccess;
}

hipError_t hipMemPoolTrimTo(hipMemPool_t pool, size_t keep) {
  Lock lock(state().mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  if (!known(p)) return hipErrorInvalidValue;
  release_free_blocks_locked(p, keep);
  return hipSuccess;
}

hipError_t hipDeviceGetMemPool(hipMemPool_t* pool, int device) { return device_pool(pool, device, false); }

hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t* pool, int device) { return device_pool(pool, device, true); }

hipError_t hipDeviceSetMemPool(int device, hipMemPool_t pool) {
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  auto* p = reinterpret_cast<Pool*>(pool);
  if (device < 0 || device >= s.devices) return hipErrorInvalidDevice;
  if (!known(p) || p->device != device) return hipErrorInvalidValue;
  s.current_pool[device] = p;
  return hipSuccess;
}

hipError_t hipMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void* value) {
  Lock lock(state().mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  if (!known(p) || value == nullptr) return hipErrorInvalidValue;
  auto* v = static_cast<uint64_t*>(value);
  switch (attr) {
    case hipMemPoolAttrReleaseThreshold: *v = p->release_threshold; return hipSuccess;
    case hipMemPoolAttrReservedMemCurrent: *v = p->reserved(); return hipSuccess;
    case hipMemPoolAttrReservedMemHigh: *v = p->reserved_high; return hipSuccess;
    case hipMemPoolAttrUsedMemCurrent: *v = p->used(); return hipSuccess;
    case hipMemPoolAttrUsedMemHigh: *v = p->used_high; return hipSuccess;
    default: return hipErrorInvalidValue;
  }
}

hipError_t hipMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void* value) {
  Lock lock(state().mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  if (!known(p) || value == nullptr) return hipErrorInvalidValue;
  const uint64_t v = *static_cast<uint64_t*>(value);
  switch (attr) {
    case hipMemPoolAttrReleaseThreshold: p->release_threshold = v; return hipSuccess;
    case hipMemPoolAttrReservedMemHigh:
      if (v != 0) return hipErrorInvalidValue;
      p->reserved_high = p->reserved();
      return hipSuccess;
    case hipMemPoolAttrUsedMemHigh:
      if (v != 0) return hipErrorInvalidValue;
      p->used_high = p->used();
      return hipSuccess;
    default: return hipErrorInvalidValue;
  }
}

}  // extern "C"
