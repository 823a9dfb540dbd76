// HIP linear device memory, managed memory and pinned host memory: what the program asked for, at
// the size it asked (pitched calls: pitch × rows as HIP returned it).
#include "../export.h"
#include "hip_record.h"

using namespace gmp;
using namespace gmp::shim;
using namespace gmp::shim::hip;

GMP_EXPORT hipError_t hipMalloc(void** ptr, size_t size) {
  auto real = GMP_HIP_REAL_C(hipMalloc);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipMalloc, Kind::Linear, ptr, size, [&] { return real(ptr, size); });
}

GMP_EXPORT hipError_t hipExtMallocWithFlags(void** ptr, size_t size, unsigned int flags) {
  auto real = GMP_HIP_REAL(hipExtMallocWithFlags);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipExtMallocWithFlags, Kind::Linear, ptr, size, [&] { return real(ptr, size, flags); });
}

GMP_EXPORT hipError_t hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  auto real = GMP_HIP_REAL(hipMallocPitch);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipMallocPitch, Kind::Linear, [&] { return real(ptr, pitch, width, height); }, [&](bool ok) {
    ok = ok && ptr != nullptr && pitch != nullptr;
    return AllocRecord{ok ? address_of(*ptr) : 0, (ok ? uint64_t{*pitch} : uint64_t{width}) * height};
  });
}

GMP_EXPORT hipError_t hipMalloc3D(hipPitchedPtr* pitched, hipExtent extent) {
  auto real = GMP_HIP_REAL(hipMalloc3D);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipMalloc3D, Kind::Linear, [&] { return real(pitched, extent); }, [&](bool ok) {
    ok = ok && pitched != nullptr;
    const uint64_t rows = uint64_t{extent.height} * extent.depth;
    return AllocRecord{ok ? address_of(pitched->ptr) : 0, (ok ? uint64_t{pitched->pitch} : uint64_t{extent.width}) * rows};
  });
}

GMP_EXPORT hipError_t hipMallocManaged(void** ptr, size_t size, unsigned int flags) {
  auto real = GMP_HIP_REAL_C(hipMallocManaged);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipMallocManaged, Kind::Managed, ptr, size, [&] { return real(ptr, size, flags); });
}

GMP_EXPORT hipError_t hipFree(void* ptr) {
  auto real = GMP_HIP_REAL(hipFree);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::Free, Api::hipFree, Kind::Linear, address_of(ptr), [&] { return real(ptr); });
}

GMP_EXPORT hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  auto real = GMP_HIP_REAL_C(hipHostMalloc);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipHostMalloc, Kind::HostPinned, ptr, size, [&] { return real(ptr, size, flags); });
}

GMP_EXPORT hipError_t hipMallocHost(void** ptr, size_t size) {
  auto real = GMP_HIP_REAL_C(hipMallocHost);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipMallocHost, Kind::HostPinned, ptr, size, [&] { return real(ptr, size); });
}

GMP_EXPORT hipError_t hipHostAlloc(void** ptr, size_t size, unsigned int flags) {
  auto real = GMP_HIP_REAL_C(hipHostAlloc);
  if (real == nullptr) return hipErrorNotInitialized;
  return allocate(Api::hipHostAlloc, Kind::HostPinned, ptr, size, [&] { return real(ptr, size, flags); });
}

GMP_EXPORT hipError_t hipHostFree(void* ptr) {
  auto real = GMP_HIP_REAL(hipHostFree);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::Free, Api::hipHostFree, Kind::HostPinned, address_of(ptr), [&] { return real(ptr); });
}

GMP_EXPORT hipError_t hipFreeHost(void* ptr) {
  auto real = GMP_HIP_REAL_C(hipFreeHost);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::Free, Api::hipFreeHost, Kind::HostPinned, address_of(ptr), [&] { return real(ptr); });
}
