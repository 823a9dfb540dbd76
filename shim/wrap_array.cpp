// CUDA arrays. Their footprint comes from the driver (cuArrayGetMemoryRequirements) where it has
// it, else from the descriptor, which ignores the driver's padding and alignment.
#include "../device_limit/device_limit.h"
#include "array_bytes.h"
#include "export.h"
#include "record.h"

using namespace gmp;
using namespace gmp::shim;

namespace {

uint64_t descriptor_bytes(const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  if (d == nullptr) return 0;
  return shim::descriptor_bytes(d->Width, d->Height, d->Depth, format_bytes(d->Format) * d->NumChannels, levels);
}

CUDA_ARRAY3D_DESCRIPTOR as_3d(const CUDA_ARRAY_DESCRIPTOR* d) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  if (d != nullptr) {
    out.Width = d->Width;
    out.Height = d->Height;
    out.Format = d->Format;
    out.NumChannels = d->NumChannels;
  }
  return out;
}

uint64_t array_bytes(CUarray a, int device, uint64_t fallback) {
  auto get = GMP_REAL(cuArrayGetMemoryRequirements);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  if (get != nullptr && device >= 0 && get(&req, a, device) == CUDA_SUCCESS && req.size > 0) return req.size;
  return fallback;
}

uint64_t mipmapped_bytes(CUmipmappedArray a, int device, uint64_t fallback) {
  auto get = GMP_REAL(cuMipmappedArrayGetMemoryRequirements);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  if (get != nullptr && device >= 0 && get(&req, a, device) == CUDA_SUCCESS && req.size > 0) return req.size;
  return fallback;
}

// Records an array creation: the driver's own footprint for a created array (`driver_size`), else
// what the descriptor implies.
template <typename Handle, typename DriverSize>
void record_array(Api api, CUresult r, Handle* handle, uint64_t descriptor_size, DriverSize driver_size) {
  ErrnoKeeper keep;
  const int device = current_device();
  const bool ok = r == CUDA_SUCCESS && handle != nullptr;
  const uint64_t size = ok ? driver_size(*handle, device, descriptor_size) : descriptor_size;
  record_alloc(api, Kind::Array, device, r, {.address = ok ? reinterpret_cast<uint64_t>(*handle) : 0, .size = size});
}

// Under a device limit: the created array counted by its footprint, or destroyed again past it.
template <typename Handle, typename DriverSize, typename Destroy>
CUresult limited(CUresult r, Handle* handle, uint64_t descriptor_size, DriverSize driver_size, Destroy destroy) {
  if (r != CUDA_SUCCESS || handle == nullptr || !limit::on()) return r;
  const int device = current_device();
  const auto key = reinterpret_cast<uint64_t>(*handle);
  return limit::created(r, limit::Table::Array, key, device, driver_size(*handle, device, descriptor_size), [&] {
    destroy(*handle);
    *handle = nullptr;
  });
}

}  // namespace

GMP_EXPORT CUresult cuArrayCreate_v2(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  auto real = GMP_REAL(cuArrayCreate_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUDA_ARRAY3D_DESCRIPTOR d3 = as_3d(desc);
  const uint64_t described = descriptor_bytes(desc ? &d3 : nullptr, 1);
  const CUresult r = limited(real(handle, desc), handle, described, array_bytes, GMP_REAL(cuArrayDestroy));
  if (recording()) record_array(Api::cuArrayCreate_v2, r, handle, described, array_bytes);
  return r;
}

GMP_EXPORT CUresult cuArray3DCreate_v2(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  auto real = GMP_REAL(cuArray3DCreate_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const uint64_t described = descriptor_bytes(desc, 1);
  const CUresult r = limited(real(handle, desc), handle, described, array_bytes, GMP_REAL(cuArrayDestroy));
  if (recording()) record_array(Api::cuArray3DCreate_v2, r, handle, described, array_bytes);
  return r;
}

GMP_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                           unsigned int levels) {
  auto real = GMP_REAL(cuMipmappedArrayCreate);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const uint64_t described = descriptor_bytes(desc, levels);
  const CUresult r =
      limited(real(handle, desc, levels), handle, described, mipmapped_bytes, GMP_REAL(cuMipmappedArrayDestroy));
  if (recording()) record_array(Api::cuMipmappedArrayCreate, r, handle, described, mipmapped_bytes);
  return r;
}

GMP_EXPORT CUresult cuArrayDestroy(CUarray a) {
  auto real = GMP_REAL(cuArrayDestroy);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const auto key = reinterpret_cast<uint64_t>(a);
  return record_around_release(Op::Free, Api::cuArrayDestroy, Kind::Array, key, [&] {
    return limit::on() ? limit::release(limit::Table::Array, key, [&] { return real(a); }) : real(a);
  });
}

GMP_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) {
  auto real = GMP_REAL(cuMipmappedArrayDestroy);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const auto key = reinterpret_cast<uint64_t>(a);
  return record_around_release(Op::Free, Api::cuMipmappedArrayDestroy, Kind::Array, key, [&] {
    return limit::on() ? limit::release(limit::Table::Array, key, [&] { return real(a); }) : real(a);
  });
}
