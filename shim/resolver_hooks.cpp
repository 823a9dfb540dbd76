// How callers reach the driver without linking it: dlsym on the libcuda handle (and on the HIP and
// HSA runtimes' handles: hip/hip_runtime.h) and the driver's own resolver, cuGetProcAddress
// (4-argument ABI) and cuGetProcAddress_v2. Each asks the real
// resolver first, then substitutes our wrapper for the exact pointer it returned, including the
// resolver's self-lookup ("cuGetProcAddress"), so no caller escapes.
//
// This file is always compiled with sibling-call optimisation (see CMakeLists.txt): dlsym must
// forward foreign lookups as a tail jump so that glibc still sees the original caller, which
// RTLD_NEXT resolves against.
#include <dlfcn.h>

#include <cuda.h>

#include "../collector/seam.h"
#include "../device_limit/device_limit.h"
#include "export.h"
#include "hip/hip_runtime.h"
#include "real_driver.h"

using namespace gmp;
using namespace gmp::shim;

namespace {

// Out of line, so that dlsym itself keeps no frame state and can end in a tail jump.
__attribute__((noinline)) void* substitute_for_dlsym(void* handle, const char* symbol) {
  if (void* w = limit::nvml_substitute(handle, symbol)) return w;
  if (symbol != nullptr && symbol[0] == 'h' && session_enabled()) return hip::wrapper_for_lookup(handle, symbol);
  Entry entry;
  if (!wrapped_entry_for_name(symbol, &entry) || !session_enabled()) return nullptr;
  if (!ensure_driver(handle)) return nullptr;
  void* p = real_dlsym()(handle, symbol);
  // Anything but the driver's own function (another library's symbol of that name) is left to the
  // plain lookup below, which then answers for the caller exactly as glibc would.
  return p != nullptr && p == real(entry) ? wrapper(entry) : nullptr;
}

void substitute_resolved(CUresult r, void** pfn) {
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr && session_enabled()) *pfn = route(*pfn);
}

}  // namespace

GMP_EXPORT void* dlsym(void* __restrict handle, const char* __restrict symbol) noexcept {
  if (void* w = substitute_for_dlsym(handle, symbol)) return w;
  return real_dlsym()(handle, symbol);  // tail call
}

GMP_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* status) {
  auto real_fn = GMP_REAL(cuGetProcAddress_v2);
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real_fn(symbol, pfn, version, flags, status);
  substitute_resolved(r, pfn);
  return r;
}

// The CUDA 11.3 ABI keeps its own exported name, which cuda.h now maps to the _v2 function.
extern "C" __attribute__((visibility("default"))) CUresult gmp_cuGetProcAddress_v1(
    const char* symbol, void** pfn, int version, cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult gmp_cuGetProcAddress_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto real_fn = reinterpret_cast<Fn>(real(Entry::cuGetProcAddress));
  if (real_fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real_fn(symbol, pfn, version, flags);
  substitute_resolved(r, pfn);
  return r;
}
