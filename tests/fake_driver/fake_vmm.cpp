// Virtual memory management: physical handles, VA reservations and mappings.
//
// Granularity 2 MiB (minimum and recommended). Physical handles are charged at cuMemCreate and
// uncharged only once they are released AND no mapping refers to them. Virtual addresses come
// from a bump allocator starting at 0x7e0000000000 (never reused) and have no backing memory.
#include "fake_capture.h"

#include <algorithm>
#include <vector>

using namespace fakecuda;

namespace {

bool valid_prop(const CUmemAllocationProp* prop) {
  return prop != nullptr && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && valid_device(prop->location.id);
}

// Drops a released handle's physical bytes once nothing maps it any more.
void maybe_destroy_handle_locked(CUmemGenericAllocationHandle h) {
  auto it = state().handles.find(h);
  if (it == state().handles.end()) return;
  if (it->second.released && it->second.mappings == 0) {
    uncharge_locked(it->second.device, it->second.size);
    state().handles.erase(it);
  }
}

// Reservation containing [ptr, ptr+size), or end().
std::map<CUdeviceptr, size_t>::iterator find_reservation_locked(CUdeviceptr ptr, size_t size) {
  auto& r = state().reservations;
  auto it = r.upper_bound(ptr);
  if (it == r.begin()) return r.end();
  --it;
  if (ptr - it->first + size > it->second) return r.end();
  return it;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  FAKE_REQUIRE_INIT(lock);
  if (granularity == nullptr || !valid_prop(prop)) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  FAKE_ZERO_OUT(handle, 0);
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *handle = 0;
  if (!valid_prop(prop) || flags != 0 || size == 0 || size % kVmmGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int dev = prop->location.id;
  if (!charge_locked(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  State& s = state();
  const CUmemGenericAllocationHandle h = s.next_handle++;
  s.handles[h] = PhysHandle{dev, size, false, 0, *prop};
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  auto it = state().handles.find(handle);
  if (it == state().handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;
  maybe_destroy_handle_locked(handle);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  FAKE_REQUIRE_INIT(lock);
  auto it = state().handles.find(handle);
  if (prop == nullptr || it == state().handles.end() || it->second.released) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *prop = it->second.prop;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  (void)addr;  // the hint is ignored
  FAKE_ZERO_OUT(ptr, 0);
  FAKE_REQUIRE_INIT(lock);
  if (ptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ptr = 0;
  if (size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  const size_t align = std::max(alignment, kVmmGranularity);
  const size_t rounded = round_up(size, kVmmGranularity);
  const CUdeviceptr start = round_up(s.va_next, align);
  if (rounded > (~0ULL) - start) return CUDA_ERROR_OUT_OF_MEMORY;
  s.va_next = start + rounded;
  s.reservations[start] = rounded;
  *ptr = start;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE_REQUIRE_INIT(lock);
  State& s = state();
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || round_up(size, kVmmGranularity) != it->second) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto m = s.mappings.lower_bound(ptr);
  if (m != s.mappings.end() && m->first < ptr + it->second) return CUDA_ERROR_INVALID_VALUE;
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  State& s = state();
  auto h = s.handles.find(handle);
  if (h == s.handles.end() || h->second.released) return CUDA_ERROR_INVALID_VALUE;
  if (flags != 0 || size == 0 || size % kVmmGranularity != 0 || ptr % kVmmGranularity != 0 ||
      offset % kVmmGranularity != 0 || offset > h->second.size ||
      size > h->second.size - offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (find_reservation_locked(ptr, size) == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  // No overlap with an existing mapping.
  auto next = s.mappings.lower_bound(ptr);
  if (next != s.mappings.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != s.mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  s.mappings[ptr] = Mapping{size, offset, handle};
  ++h->second.mappings;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  State& s = state();
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  const CUdeviceptr end = ptr + size;
  // A mapping that starts before ptr but reaches into the range: partial unmap, refused.
  auto first = s.mappings.lower_bound(ptr);
  if (first != s.mappings.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<std::map<CUdeviceptr, Mapping>::iterator> victims;
  for (auto it = first; it != s.mappings.end() && it->first < end; ++it) {
    if (it->first + it->second.size > end) return CUDA_ERROR_INVALID_VALUE;  // partial
    victims.push_back(it);
  }
  if (victims.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (auto it : victims) {
    const CUmemGenericAllocationHandle h = it->second.handle;
    s.mappings.erase(it);
    --s.handles.at(h).mappings;
    maybe_destroy_handle_locked(h);
  }
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  (void)ptr;
  (void)size;
  FAKE_REQUIRE_INIT(lock);
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // extern "C"
