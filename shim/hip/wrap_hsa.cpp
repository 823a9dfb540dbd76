// The HSA level: every allocation from an HSA memory pool and every free (hsa_level.h decides what
// each one is). The HIP runtime reaches these through ordinary dynamic symbols.
#include "../export.h"
#include "../record.h"
#include "hip_runtime.h"
#include "hsa_level.h"

using namespace gmp;
using namespace gmp::shim;

GMP_EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags,
                                                     void** ptr) {
  auto real = GMP_HIP_REAL(hsa_amd_memory_pool_allocate);
  if (real == nullptr) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  const hsa_status_t s = real(pool, size, flags, ptr);
  if (!recording()) return s;
  ErrnoKeeper keep;
  if (s == HSA_STATUS_SUCCESS && ptr != nullptr) {
    hsa_level::allocated(pool, size, *ptr);
  } else {
    hsa_level::allocation_failed(pool, size, s);
  }
  return s;
}

GMP_EXPORT hsa_status_t hsa_amd_memory_pool_free(void* ptr) {
  auto real = GMP_HIP_REAL(hsa_amd_memory_pool_free);
  if (real == nullptr) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (!recording() || ptr == nullptr) return real(ptr);
  ErrnoKeeper keep;
  const hsa_level::FreeTicket ticket = hsa_level::before_free(ptr);
  keep.restore();
  const hsa_status_t s = real(ptr);
  keep.capture();
  hsa_level::after_free(ptr, ticket, s);
  return s;
}
