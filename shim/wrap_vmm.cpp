// Virtual memory management: physical handles (cuMemCreate/cuMemRelease) are reserved memory,
// mappings (cuMemMap/cuMemUnmap) are allocated memory; the collector joins them by handle.
#include "../device_limit/device_limit.h"
#include "export.h"
#include "record.h"

using namespace gmp;
using namespace gmp::shim;

GMP_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                unsigned long long flags) {
  auto real = GMP_REAL(cuMemCreate);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const int device =
      prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
  const auto call = [&] { return real(handle, size, prop, flags); };
  const CUresult r = limit::on() ? limit::vmm_create(device, handle, size, call) : call();
  if (recording()) {
    ErrnoKeeper keep;
    record_vmm_create(Api::cuMemCreate, device, r, r == CUDA_SUCCESS && handle != nullptr ? *handle : 0, size,
                      record_driver_memory);
  }
  return r;
}

GMP_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto real = GMP_REAL(cuMemRelease);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r =
      record_around_release(Op::VmmRelease, Api::cuMemRelease, Kind::Vmm, handle, [&] { return real(handle); });
  if (r == CUDA_SUCCESS && limit::on()) limit::vmm_released(handle);
  return r;
}

GMP_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                             unsigned long long flags) {
  auto real = GMP_REAL(cuMemMap);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(ptr, size, offset, handle, flags);
  if (r == CUDA_SUCCESS && limit::on()) limit::vmm_mapped(ptr, handle);
  if (recording()) {
    ErrnoKeeper keep;
    record_vmm_map(Api::cuMemMap, r, {ptr, size, handle, offset});
  }
  return r;
}

GMP_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  auto real = GMP_REAL(cuMemUnmap);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r =
      record_around_release(Op::VmmUnmap, Api::cuMemUnmap, Kind::Vmm, ptr, [&] { return real(ptr, size); }, size);
  if (r == CUDA_SUCCESS && limit::on()) limit::vmm_unmapped(ptr, size);
  return r;
}
