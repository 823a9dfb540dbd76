// Page-locked host memory: a process-wide bucket, not device memory.
#include "export.h"
#include "record.h"

using namespace gmp;
using namespace gmp::shim;

GMP_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  auto real = GMP_REAL(cuMemHostAlloc);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(pp, bytesize, flags);
  if (recording()) {
    ErrnoKeeper keep;
    record_alloc(Api::cuMemHostAlloc, Kind::HostPinned, -1, r,
                 {.address = pp ? reinterpret_cast<uint64_t>(*pp) : 0, .size = bytesize});
  }
  return r;
}

GMP_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  auto real = GMP_REAL(cuMemAllocHost_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(pp, bytesize);
  if (recording()) {
    ErrnoKeeper keep;
    record_alloc(Api::cuMemAllocHost_v2, Kind::HostPinned, -1, r,
                 {.address = pp ? reinterpret_cast<uint64_t>(*pp) : 0, .size = bytesize});
  }
  return r;
}

GMP_EXPORT CUresult cuMemFreeHost(void* p) {
  auto real = GMP_REAL(cuMemFreeHost);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return record_around_release(Op::Free, Api::cuMemFreeHost, Kind::HostPinned, reinterpret_cast<uint64_t>(p),
                               [&] { return real(p); });
}
