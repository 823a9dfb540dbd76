// CUDA arrays and mipmapped arrays. No backing memory; charged by their requirement size:
//   raw      = elemsize(Format) * NumChannels * Width * max(Height,1) * max(Depth,1)
//   mipmap   = elemsize * NumChannels * sum over levels l of
//              max(W>>l,1) * max(H>>l,1) * max(D>>l,1)   (H or D of 0 count as 1 at every level)
//   required = round_up(raw, 64 KiB), alignment 64 KiB
#include "fake_capture.h"

#include <algorithm>
#include <cstring>

using namespace fakecuda;

namespace {

size_t element_size(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

bool valid_channels(unsigned int n) { return n == 1 || n == 2 || n == 4; }

// elemsize * channels * W * max(H,1) * max(D,1); 0 on invalid input or overflow.
size_t raw_bytes(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  const size_t elem = element_size(d.Format);
  if (elem == 0 || !valid_channels(d.NumChannels) || d.Width == 0) return 0;
  unsigned __int128 total = static_cast<unsigned __int128>(elem) * d.NumChannels * d.Width *
                            (d.Height == 0 ? 1 : d.Height);
  total *= (d.Depth == 0 ? 1 : d.Depth);
  if (total > SIZE_MAX / 2) return 0;
  return static_cast<size_t>(total);
}

size_t mipmap_raw_bytes(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned int levels) {
  const size_t elem = element_size(d.Format);
  if (elem == 0 || !valid_channels(d.NumChannels) || d.Width == 0 || levels == 0) return 0;
  const size_t largest = std::max({d.Width, d.Height, d.Depth});
  unsigned max_levels = 1;
  while ((largest >> max_levels) != 0) ++max_levels;
  if (levels > max_levels) return 0;
  unsigned __int128 texels = 0;
  for (unsigned l = 0; l < levels; ++l) {
    const size_t w = std::max<size_t>(d.Width >> l, 1);
    const size_t h = d.Height == 0 ? 1 : std::max<size_t>(d.Height >> l, 1);
    const size_t z = d.Depth == 0 ? 1 : std::max<size_t>(d.Depth >> l, 1);
    texels += static_cast<unsigned __int128>(w) * h * z;
  }
  const unsigned __int128 total = texels * elem * d.NumChannels;
  if (total > SIZE_MAX / 2) return 0;
  return static_cast<size_t>(total);
}

void fill_requirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req, size_t bytes) {
  std::memset(req, 0, sizeof(*req));
  req->size = bytes;
  req->alignment = kArrayAlign;
}

CUresult create_array(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR& desc) {
  *handle = nullptr;
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  const size_t raw = raw_bytes(desc);
  if (raw == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t bytes = round_up(raw, kArrayAlign);
  if (!charge_locked(dev, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* a = new CUarray_st{dev, bytes, desc};
  state().arrays.insert(a);
  *handle = a;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  if (pHandle == nullptr || pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = pAllocateArray->Width;
  d.Height = pAllocateArray->Height;
  d.Depth = 0;
  d.Format = pAllocateArray->Format;
  d.NumChannels = pAllocateArray->NumChannels;
  return create_array(pHandle, d);
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  if (pHandle == nullptr || pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return create_array(pHandle, *pAllocateArray);
}

CUresult cuArrayDestroy(CUarray hArray) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (state().arrays.erase(hArray) == 0) return CUDA_ERROR_INVALID_HANDLE;
  uncharge_locked(hArray->device, hArray->bytes);
  delete hArray;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  FAKE_ZERO_OUT(pHandle, nullptr);
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (pHandle == nullptr || pMipmappedArrayDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pHandle = nullptr;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  const size_t raw = mipmap_raw_bytes(*pMipmappedArrayDesc, numMipmapLevels);
  if (raw == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t bytes = round_up(raw, kArrayAlign);
  if (!charge_locked(dev, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* m = new CUmipmappedArray_st{dev, bytes, numMipmapLevels, *pMipmappedArrayDesc};
  state().mipmaps.insert(m);
  *pHandle = m;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  FAKE_REQUIRE_INIT(lock);
  FAKE_UNSAFE_CALL();
  if (state().mipmaps.erase(hMipmappedArray) == 0) return CUDA_ERROR_INVALID_HANDLE;
  uncharge_locked(hMipmappedArray->device, hMipmappedArray->bytes);
  delete hMipmappedArray;
  return CUDA_SUCCESS;
}

CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                      CUarray array, CUdevice device) {
  FAKE_REQUIRE_INIT(lock);
  if (memoryRequirements == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (state().arrays.count(array) == 0) return CUDA_ERROR_INVALID_HANDLE;
  fill_requirements(memoryRequirements, array->bytes);
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                               CUmipmappedArray mipmap, CUdevice device) {
  FAKE_REQUIRE_INIT(lock);
  if (memoryRequirements == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (state().mipmaps.count(mipmap) == 0) return CUDA_ERROR_INVALID_HANDLE;
  fill_requirements(memoryRequirements, mipmap->bytes);
  return CUDA_SUCCESS;
}

}  // extern "C"
