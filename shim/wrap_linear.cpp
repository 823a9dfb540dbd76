// Linear device memory (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2) and managed memory.
#include "../device_limit/device_limit.h"
#include "export.h"
#include "record.h"

using namespace gmp;
using namespace gmp::shim;

GMP_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  auto real = GMP_REAL(cuMemAlloc_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = limit::on() ? limit::linear(current_device(), dptr, bytesize, [&] { return real(dptr, bytesize); })
                                  : real(dptr, bytesize);
  if (recording()) {
    ErrnoKeeper keep;
    record_alloc(Api::cuMemAlloc_v2, Kind::Linear, current_device(), r, {.address = dptr ? *dptr : 0, .size = bytesize});
  }
  return r;
}

GMP_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                       unsigned int element_size) {
  auto real = GMP_REAL(cuMemAllocPitch_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(dptr, pitch, width, height, element_size);
  if (limit::on() && r == CUDA_SUCCESS) {
    r = limit::created(r, limit::Table::Linear, *dptr, current_device(), uint64_t{*pitch} * height, [&] {
      GMP_REAL(cuMemFree_v2)(*dptr);
      *dptr = 0;
    });
  }
  if (recording()) {
    ErrnoKeeper keep;
    const uint64_t size = r == CUDA_SUCCESS && pitch ? uint64_t{*pitch} * height : uint64_t{width} * height;
    record_alloc(Api::cuMemAllocPitch_v2, Kind::Linear, current_device(), r, {.address = dptr ? *dptr : 0, .size = size});
  }
  return r;
}

GMP_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  auto real = GMP_REAL(cuMemAllocManaged);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(dptr, bytesize, flags);
  if (recording()) {
    ErrnoKeeper keep;
    record_alloc(Api::cuMemAllocManaged, Kind::Managed, current_device(), r,
                 {.address = dptr ? *dptr : 0, .size = bytesize});
  }
  return r;
}

GMP_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  auto real = GMP_REAL(cuMemFree_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return record_around_release(Op::Free, Api::cuMemFree_v2, Kind::Linear, dptr, [&] {
    return limit::on() ? limit::release(limit::Table::Linear, dptr, [&] { return real(dptr); }) : real(dptr);
  });
}
