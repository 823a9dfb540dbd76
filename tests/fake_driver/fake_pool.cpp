// Stream-ordered allocator: memory pools, cuMemAllocAsync, cuMemAllocFromPoolAsync,
// cuMemFreeAsync (and their _ptsz exports).
//
// Granularity G = 2 MiB.
//   alloc S:   used += S; if used > reserved: reserved = round_up(used, G), the growth charged
//              against the device capacity (if it does not fit: OUT_OF_MEMORY, nothing changes).
//   free:      used -= S at once; reserved unchanged.
//   sync:      every pool of every device: reserved = min(reserved,
//                  max(round_up(used, G), round_up(release_threshold, G)))
//   trim(keep): reserved = min(reserved, max(round_up(used, G), round_up(keep, G)))
//   destroy:   releases the pool's live allocations and all its reserved bytes.
#include "fake_capture.h"

#include <algorithm>
#include <vector>

using namespace fakecuda;

namespace fakecuda {

namespace {

void set_reserved_locked(CUmemPoolHandle_st* p, size_t target) {
  if (target < p->reserved) {
    uncharge_locked(p->device, p->reserved - target);
    p->reserved = target;
  }
}

}  // namespace

void shrink_pools_on_sync_locked() {
  for (CUmemPoolHandle_st* p : state().pools) {
    const size_t keep = std::max(round_up(p->used, kPoolGranularity),
                                 round_up(static_cast<size_t>(p->release_threshold),
                                          kPoolGranularity));
    set_reserved_locked(p, std::min(p->reserved, keep));
  }
}

void create_default_pools_locked() {
  State& s = state();
  for (size_t i = 0; i < s.devices.size(); ++i) {
    auto* p = new CUmemPoolHandle_st();
    p->device = static_cast<int>(i);
    p->is_default = true;
    p->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p->props.location.id = static_cast<int>(i);
    s.pools.insert(p);
    s.devices[i].default_pool = p;
    s.devices[i].current_pool = p;
  }
}

}  // namespace fakecuda

namespace {

CUresult pool_alloc_locked(CUdeviceptr* dptr, size_t bytes, CUmemPoolHandle_st* p) {
  const size_t new_used = p->used + bytes;
  if (new_used < p->used) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t growth = 0;
  if (new_used > p->reserved) {
    const size_t new_reserved = round_up(new_used, kPoolGranularity);
    if (p->max_size != 0 && new_reserved > p->max_size) return CUDA_ERROR_OUT_OF_MEMORY;
    growth = new_reserved - p->reserved;
    if (!charge_locked(p->device, growth)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  size_t backing = 0;
  void* mem = backing_alloc(bytes, &backing);
  if (mem == nullptr) {
    uncharge_locked(p->device, growth);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  p->reserved += growth;
  p->reserved_high = std::max(p->reserved_high, p->reserved);
  p->used = new_used;
  p->used_high = std::max(p->used_high, p->used);
  state().blocks[reinterpret_cast<uintptr_t>(mem)] =
      Block{BlockKind::Pool, p->device, bytes, 0, p, backing};
  *dptr = reinterpret_cast<CUdeviceptr>(mem);
  return CUDA_SUCCESS;
}

CUresult alloc_async(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  FAKE_ZERO_OUT(dptr, 0);
  FAKE_REQUIRE_INIT(lock);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = stream_device_locked(stream, &dev); r != CUDA_SUCCESS) return r;
  CUmemPoolHandle_st* pool = state().devices[static_cast<size_t>(dev)].current_pool;
  // On a capturing stream: an allocation node, nothing allocated (see fake_graph.cpp).
  if (capture_of_locked(stream) != nullptr) {
    return capture_alloc_locked(stream, bytes, dev, pool->props, dptr);
  }
  FAKE_UNSAFE_CALL();
  return pool_alloc_locked(dptr, bytes, pool);
}

CUresult alloc_from_pool_async(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                               CUstream stream) {
  FAKE_ZERO_OUT(dptr, 0);
  FAKE_REQUIRE_INIT(lock);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (bytes == 0 || state().pools.count(pool) == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = stream_device_locked(stream, &dev); r != CUDA_SUCCESS) return r;
  if (capture_of_locked(stream) != nullptr) {  // the node's device is the pool's
    return capture_alloc_locked(stream, bytes, pool->device, pool->props, dptr);
  }
  FAKE_UNSAFE_CALL();
  return pool_alloc_locked(dptr, bytes, pool);
}

CUresult free_async(CUdeviceptr dptr, CUstream stream) {
  FAKE_REQUIRE_INIT(lock);
  int dev = 0;
  if (CUresult r = stream_device_locked(stream, &dev); r != CUDA_SUCCESS) return r;
  if (capture_of_locked(stream) != nullptr) return capture_free_locked(stream, dptr);
  FAKE_UNSAFE_CALL();
  if (dptr == 0) return CUDA_SUCCESS;  // as the real driver: a no-op
  // Pool allocations and (like the real driver) cuMemAlloc memory are accepted; managed memory
  // is refused with CUDA_ERROR_NOT_SUPPORTED (measured on driver 580).
  auto it = state().blocks.find(static_cast<uintptr_t>(dptr));
  if (it != state().blocks.end() && it->second.kind == BlockKind::Managed) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return free_device_block_locked(dptr);
}

bool valid_pool_locked(CUmemoryPool pool) { return state().pools.count(pool) != 0; }

}  // namespace

extern "C" {

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, hStream);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  return alloc_from_pool_async(dptr, bytesize, pool, hStream);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  return alloc_from_pool_async(dptr, bytesize, pool, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  FAKE_REQUIRE_INIT(lock);
  if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!valid_device(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  auto* p = new CUmemPoolHandle_st();
  p->device = poolProps->location.id;
  p->props = *poolProps;
  p->max_size = poolProps->maxSize;
  state().pools.insert(p);
  *pool = p;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  FAKE_REQUIRE_INIT(lock);
  State& s = state();
  if (!valid_pool_locked(pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  for (auto it = s.blocks.begin(); it != s.blocks.end();) {
    if (it->second.kind == BlockKind::Pool && it->second.pool == pool) {
      backing_free(reinterpret_cast<void*>(it->first), it->second.backing);
      it = s.blocks.erase(it);
    } else {
      ++it;
    }
  }
  uncharge_locked(pool->device, pool->reserved);
  Device& d = s.devices[static_cast<size_t>(pool->device)];
  if (d.current_pool == pool) d.current_pool = d.default_pool;
  s.pools.erase(pool);
  delete pool;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (!valid_pool_locked(pool)) return CUDA_ERROR_INVALID_VALUE;
  const size_t keep = std::max(round_up(pool->used, kPoolGranularity),
                               round_up(minBytesToKeep, kPoolGranularity));
  if (keep < pool->reserved) {
    uncharge_locked(pool->device, pool->reserved - keep);
    pool->reserved = keep;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (!valid_pool_locked(pool) || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* u64 = static_cast<cuuint64_t*>(value);
  auto* i32 = static_cast<int*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *i32 = pool->reuse_follow_event_dependencies;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *i32 = pool->reuse_allow_opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *i32 = pool->reuse_allow_internal_dependencies;
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *u64 = pool->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *u64 = pool->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *u64 = pool->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *u64 = pool->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *u64 = pool->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (!valid_pool_locked(pool) || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // int-typed attributes are read as int, the others as cuuint64_t (never past the caller's value)
  const auto i32 = [value] { return *static_cast<const int*>(value); };
  const auto u64 = [value] { return *static_cast<const cuuint64_t*>(value); };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      pool->reuse_follow_event_dependencies = i32();
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: pool->reuse_allow_opportunistic = i32(); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse_allow_internal_dependencies = i32();
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->release_threshold = u64(); break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:  // only 0 is legal: resets the watermark
      if (u64() != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (u64() != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = state().devices[static_cast<size_t>(dev)].default_pool;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pool = state().devices[static_cast<size_t>(dev)].current_pool;
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (!valid_pool_locked(pool) || pool->device != dev) return CUDA_ERROR_INVALID_VALUE;
  state().devices[static_cast<size_t>(dev)].current_pool = pool;
  return CUDA_SUCCESS;
}

}  // extern "C"
