// Host-backed allocations: linear (cuMemAlloc_v2, cuMemAllocPitch_v2), managed, pinned host
// memory, cuMemFree_v2, cuMemGetInfo_v2, cuPointerGetAttribute and the test hooks.
#include "fake_capture.h"

#include <algorithm>
#include <climits>
#include "fakecuda_hooks.h"

using namespace fakecuda;

namespace fakecuda {

CUresult linear_alloc_locked(CUdeviceptr* dptr, size_t bytes, int dev) {
  if (!charge_locked(dev, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t backing = 0;
  void* p = backing_alloc(bytes, &backing);
  if (p == nullptr) {
    uncharge_locked(dev, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const auto addr = reinterpret_cast<uintptr_t>(p);
  state().blocks[addr] = Block{BlockKind::Linear, dev, bytes, bytes, nullptr, backing};
  *dptr = static_cast<CUdeviceptr>(addr);
  return CUDA_SUCCESS;
}

// cuMemFree_v2 semantics: linear, pitch, managed and stream-ordered (pool) allocations, and
// live graph allocations (freed outside their graph).
CUresult free_device_block_locked(CUdeviceptr dptr) {
  if (graph_free_live_locked(dptr)) return CUDA_SUCCESS;
  auto it = state().blocks.find(static_cast<uintptr_t>(dptr));
  if (it == state().blocks.end() || it->second.kind == BlockKind::Host) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Block& b = it->second;
  if (b.kind == BlockKind::Linear) uncharge_locked(b.device, b.charged);
  if (b.kind == BlockKind::Pool) b.pool->used -= b.size;
  backing_free(reinterpret_cast<void*>(it->first), b.backing);
  state().blocks.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace fakecuda

namespace {

CUresult host_alloc(void** pp, size_t bytes, unsigned int flags) {
  FAKE_ZERO_OUT(pp, nullptr);
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pp = nullptr;
  constexpr unsigned kValid =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (bytes == 0 || (flags & ~kValid) != 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  size_t backing = 0;
  void* p = backing_alloc(bytes, &backing);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  state().blocks[reinterpret_cast<uintptr_t>(p)] =
      Block{BlockKind::Host, dev, bytes, 0, nullptr, backing};
  *pp = p;
  return CUDA_SUCCESS;
}

CUresult alloc_linear(CUdeviceptr* dptr, size_t bytes) {
  FAKE_ZERO_OUT(dptr, 0);
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  return linear_alloc_locked(dptr, bytes, dev);
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) { return alloc_linear(dptr, bytesize); }

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  FAKE_ZERO_OUT(dptr, 0);
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  const size_t pitch = round_up(WidthInBytes, kPitchAlign);
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult r = linear_alloc_locked(dptr, pitch * Height, dev);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (dptr == 0) return CUDA_SUCCESS;
  return free_device_block_locked(dptr);
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  FAKE_ZERO_OUT(dptr, 0);
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  size_t backing = 0;
  void* p = backing_alloc(bytesize, &backing);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  state().blocks[reinterpret_cast<uintptr_t>(p)] =
      Block{BlockKind::Managed, dev, bytesize, 0, nullptr, backing};
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return host_alloc(pp, bytesize, Flags);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return host_alloc(pp, bytesize, 0); }

CUresult cuMemFreeHost(void* p) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  auto it = state().blocks.find(reinterpret_cast<uintptr_t>(p));
  if (p == nullptr || it == state().blocks.end() || it->second.kind != BlockKind::Host) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  backing_free(p, it->second.backing);
  state().blocks.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  FAKE_REQUIRE_INIT(lock);
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  const Device& d = state().devices[static_cast<size_t>(dev)];
  *free = d.capacity - d.charged;
  *total = d.capacity;
  return CUDA_SUCCESS;
}

// The 32-bit ABI (exported, never handed out by cuGetProcAddress here): figures above 4 GiB - 1
// read as UINT_MAX.
CUresult fake_cuMemGetInfo_v1(unsigned int* free, unsigned int* total) {
  size_t f = 0, t = 0;
  const CUresult r = cuMemGetInfo_v2(free != nullptr ? &f : nullptr, total != nullptr ? &t : nullptr);
  if (r != CUDA_SUCCESS) return r;
  *free = static_cast<unsigned int>(std::min<size_t>(f, UINT_MAX));
  *total = static_cast<unsigned int>(std::min<size_t>(t, UINT_MAX));
  return r;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FAKE_REQUIRE_INIT(lock);
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  int dev = -1;
  CUdeviceptr start = 0;
  size_t size = 0;
  BlockKind kind = BlockKind::Linear;
  CUmemPoolHandle_st* pool = nullptr;
  auto it = s.blocks.upper_bound(static_cast<uintptr_t>(ptr));
  if (it != s.blocks.begin()) {
    --it;
    if (ptr >= it->first && ptr - it->first < it->second.size) {
      dev = it->second.device;
      start = it->first;
      size = it->second.size;
      kind = it->second.kind;
      pool = it->second.pool;
    }
  }
  if (dev < 0) graph_live_range_locked(ptr, &dev, &start, &size);
  if (dev < 0) {
    auto m = s.mappings.upper_bound(ptr);
    if (m != s.mappings.begin()) {
      --m;
      if (ptr >= m->first && ptr - m->first < m->second.size) {
        dev = s.handles.at(m->second.handle).device;
        start = m->first;
        size = m->second.size;
      }
    }
  }
  if (dev < 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = dev; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = s.devices[static_cast<size_t>(dev)].primary;
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = kind == BlockKind::Host      ? CU_MEMORYTYPE_HOST
                                          : kind == BlockKind::Managed ? CU_MEMORYTYPE_UNIFIED
                                                                       : CU_MEMORYTYPE_DEVICE;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = ptr; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = kind == BlockKind::Managed ? 1u : 0u;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = start; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = size; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *static_cast<CUmemoryPool*>(data) = pool; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// ---- test hooks ----

CUresult fakecuda_alloc_untracked(unsigned long long* dptr, size_t size) {
  static_assert(sizeof(unsigned long long) == sizeof(CUdeviceptr));
  return alloc_linear(reinterpret_cast<CUdeviceptr*>(dptr), size);
}

size_t fakecuda_charged_bytes(int device) {
  Lock lock(state().mu);
  if (!state().initialized || !valid_device(device)) return 0;
  return state().devices[static_cast<size_t>(device)].charged;
}

}  // extern "C"
