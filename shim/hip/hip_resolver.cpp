// hipGetProcAddress (ROCm 6.2 and later) looks symbols up on the HIP library's own handle, which a
// preload cannot see: the pointer it returns for a function we wrap is swapped for our wrapper,
// as cuGetProcAddress's is on CUDA. dlsym is handled with the driver's (resolver_hooks.cpp).
#include "../../collector/seam.h"
#include "../export.h"
#include "hip_runtime.h"

using namespace gmp;
using namespace gmp::shim;

GMP_EXPORT hipError_t hipGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags,
                                        hipDriverProcAddressQueryResult* status) {
  auto real_fn = GMP_HIP_REAL(hipGetProcAddress);
  if (real_fn == nullptr) return hipErrorNotInitialized;
  const hipError_t r = real_fn(symbol, pfn, version, flags, status);
  if (r == hipSuccess && pfn != nullptr && *pfn != nullptr && session_enabled()) *pfn = hip::route(*pfn);
  return r;
}
