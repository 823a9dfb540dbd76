// HIP virtual memory management (ROCm 6): physical handles (hipMemCreate/hipMemRelease) are reserved
// memory, mappings (hipMemMap/hipMemUnmap) allocated memory, joined by handle as on CUDA. Below
// them the runtime uses hsa_amd_vmem_*, not the pool allocations the HSA level watches.
#include "../export.h"
#include "hip_record.h"

using namespace gmp;
using namespace gmp::shim;
using namespace gmp::shim::hip;

namespace {

// The device a physical allocation is made on. The properties' layout changed with ROCm 6
// (hip_api.h): the one whose location names a device is the program's; were both to, the
// runtime's major version decides (ROCm 6's layout when it does not say).
int prop_device(const hipMemAllocationProp* prop) {
  if (prop == nullptr) return -1;
  const hipMemLocation v6 = reinterpret_cast<const gmp_hipMemAllocationProp6*>(prop)->location;
  const hipMemLocation v5 = prop->location;
  const bool v6_device = v6.type == hipMemLocationTypeDevice && v6.id >= 0;
  const bool v5_device = v5.type == hipMemLocationTypeDevice && v5.id >= 0;
  if (v6_device != v5_device) return v6_device ? v6.id : v5.id;
  if (!v6_device) return -1;
  static const bool rocm6 = [] {
    auto get = GMP_HIP_REAL(hipRuntimeGetVersion);
    int v = 0;
    return get == nullptr || get(&v) != hipSuccess || v >= 60000000;  // HIP_VERSION: major × 10^7 + ...
  }();
  return rocm6 ? v6.id : v5.id;
}

}  // namespace

GMP_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t* handle, size_t size,
                                   const hipMemAllocationProp* prop, unsigned long long flags) {
  auto real = GMP_HIP_REAL(hipMemCreate);
  if (real == nullptr) return hipErrorNotInitialized;
  hsa_level::HipCall scope(hsa_level::Claim::None);
  const hipError_t r = real(handle, size, prop, flags);
  if (!scope.outermost() || !recording()) return r;
  ErrnoKeeper keep;
  const int device = prop_device(prop);
  record_vmm_create(Api::hipMemCreate, device, r, r == hipSuccess && handle != nullptr ? address_of(*handle) : 0, size,
                    record_memory_info);
  return r;
}

GMP_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  auto real = GMP_HIP_REAL(hipMemRelease);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::VmmRelease, Api::hipMemRelease, Kind::Vmm, address_of(handle), [&] { return real(handle); });
}

GMP_EXPORT hipError_t hipMemMap(void* ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                                unsigned long long flags) {
  auto real = GMP_HIP_REAL(hipMemMap);
  if (real == nullptr) return hipErrorNotInitialized;
  hsa_level::HipCall scope(hsa_level::Claim::None);
  const hipError_t r = real(ptr, size, offset, handle, flags);
  if (!scope.outermost() || !recording()) return r;
  ErrnoKeeper keep;
  record_vmm_map(Api::hipMemMap, r, {address_of(ptr), size, address_of(handle), offset});
  return r;
}

GMP_EXPORT hipError_t hipMemUnmap(void* ptr, size_t size) {
  auto real = GMP_HIP_REAL(hipMemUnmap);
  if (real == nullptr) return hipErrorNotInitialized;
  return release(Op::VmmUnmap, Api::hipMemUnmap, Kind::Vmm, address_of(ptr), [&] { return real(ptr, size); }, size);
}
