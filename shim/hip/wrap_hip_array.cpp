// HIP arrays. Their footprint is the runtime's own: the HSA allocations the call made (padded for
// the image layout), else what the descriptor implies.
#include "../array_bytes.h"
#include "../export.h"
#include "hip_record.h"

using namespace gmp;
using namespace gmp::shim;
using namespace gmp::shim::hip;

namespace {

static_assert(HIP_AD_FORMAT_HALF == 0x10 && HIP_AD_FORMAT_FLOAT == 0x20 && HIP_AD_FORMAT_SIGNED_INT32 == 0x0a,
              "format_bytes reads CUDA's numbering, which HIP shares");

uint64_t channel_bytes(const hipChannelFormatDesc* d) {
  if (d == nullptr) return 0;
  return (uint64_t(std::max(d->x, 0)) + std::max(d->y, 0) + std::max(d->z, 0) + std::max(d->w, 0)) / 8;
}

template <typename Call>
hipError_t create(Api api, hipArray** array, uint64_t descriptor_size, Call&& call) {
  hsa_level::HipCall scope(hsa_level::Claim::All);
  const hipError_t r = call();
  if (!scope.outermost() || !recording()) return r;
  ErrnoKeeper keep;
  const bool ok = r == hipSuccess && array != nullptr;
  const uint64_t handle = ok ? address_of(*array) : 0;
  const uint64_t runtime_size = scope.settle(handle);
  record_hip_alloc(api, Kind::Array, current_hip_device(), r,
                   {.address = handle, .size = runtime_size != 0 ? runtime_size : descriptor_size});
  return r;
}

}  // namespace

GMP_EXPORT hipError_t hipMallocArray(hipArray** array, const hipChannelFormatDesc* desc, size_t width, size_t height,
                                     unsigned int flags) {
  auto real = GMP_HIP_REAL(hipMallocArray);
  if (real == nullptr) return hipErrorNotInitialized;
  return create(Api::hipMallocArray, array, descriptor_bytes(width, height, 1, channel_bytes(desc)),
                [&] { return real(array, desc, width, height, flags); });
}

GMP_EXPORT hipError_t hipMalloc3DArray(hipArray** array, const hipChannelFormatDesc* desc, hipExtent extent,
                                       unsigned int flags) {
  auto real = GMP_HIP_REAL(hipMalloc3DArray);
  if (real == nullptr) return hipErrorNotInitialized;
  return create(Api::hipMalloc3DArray, array,
                descriptor_bytes(extent.width, extent.height, extent.depth, channel_bytes(desc)),
                [&] { return real(array, desc, extent, flags); });
}

GMP_EXPORT hipError_t hipArrayCreate(hipArray** array, const HIP_ARRAY_DESCRIPTOR* d) {
  auto real = GMP_HIP_REAL(hipArrayCreate);
  if (real == nullptr) return hipErrorNotInitialized;
  const uint64_t size = d != nullptr ? descriptor_bytes(d->Width, d->Height, 1, format_bytes(d->Format) * d->NumChannels) : 0;
  return create(Api::hipArrayCreate, array, size, [&] { return real(array, d); });
}

GMP_EXPORT hipError_t hipArray3DCreate(hipArray** array, const HIP_ARRAY3D_DESCRIPTOR* d) {
  auto real = GMP_HIP_REAL(hipArray3DCreate);
  if (real == nullptr) return hipErrorNotInitialized;
  const uint64_t size =
      d != nullptr ? descriptor_bytes(d->Width, d->Height, d->Depth, format_bytes(d->Format) * d->NumChannels) : 0;
  return create(Api::hipArray3DCreate, array, size, [&] { return real(array, d); });
}

GMP_EXPORT hipError_t hipFreeArray(hipArray* array) {
  auto real = GMP_HIP_REAL(hipFreeArray);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::Free, Api::hipFreeArray, Kind::Array, address_of(array), [&] { return real(array); });
}

GMP_EXPORT hipError_t hipArrayDestroy(hipArray* array) {
  auto real = GMP_HIP_REAL(hipArrayDestroy);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::Free, Api::hipArrayDestroy, Kind::Array, address_of(array), [&] { return real(array); });
}
