#include "driver_loader.h"

#include <dlfcn.h>

#include <cstdio>

#include "check.h"

namespace gmp {

namespace {

using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

template <typename F>
void assign(F& member, void* p) {
  member = reinterpret_cast<F>(p);
}

// Asks `resolver` for `base` twice, like cudart: flags 0 (default stream) and flags 2
// (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM). Keeps the flags-2 answer for stream-ordered
// calls and the flags-0 answer otherwise.
bool resolve_twice(GetProcV2 resolver, const char* base, bool per_thread, int version,
                   void** out, std::string* error) {
  void* p0 = nullptr;
  void* p2 = nullptr;
  CUdriverProcAddressQueryResult s0 = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUdriverProcAddressQueryResult s2 = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r0 = resolver(base, &p0, version, CU_GET_PROC_ADDRESS_DEFAULT, &s0);
  const CUresult r2 =
      resolver(base, &p2, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &s2);
  if (r0 != CUDA_SUCCESS || r2 != CUDA_SUCCESS || p0 == nullptr || p2 == nullptr ||
      s0 != CU_GET_PROC_ADDRESS_SUCCESS || s2 != CU_GET_PROC_ADDRESS_SUCCESS) {
    *error = std::string("cuGetProcAddress(\"") + base + "\") failed: result " +
             std::to_string(static_cast<int>(r0)) + "/" + std::to_string(static_cast<int>(r2)) +
             ", status " + std::to_string(static_cast<int>(s0)) + "/" +
             std::to_string(static_cast<int>(s2));
    return false;
  }
  *out = per_thread ? p2 : p0;
  return true;
}

bool resolve_all(GetProcV2 resolver, int version, bool allow_missing, DriverTable& t,
                 std::string* error) {
  // A member whose ABI is newer than `version` stays null: asking would return another ABI.
#define GMP_RESOLVE(member, base, per_thread, abi)                             \
  {                                                                            \
    void* p = nullptr;                                                         \
    if (version < (abi)) {                                                     \
      if (!allow_missing) {                                                    \
        *error = std::string(base) + " needs cudaVersion >= " #abi;            \
        return false;                                                          \
      }                                                                        \
    } else if (!resolve_twice(resolver, base, per_thread, version, &p, error)) { \
      if (!allow_missing) return false;                                        \
      p = nullptr;                                                             \
    }                                                                          \
    assign(t.member, p);                                                       \
  }
  GMP_DRIVER_ENTRIES(GMP_RESOLVE)
#undef GMP_RESOLVE
  return true;
}

bool dlsym_all(void* handle, bool allow_missing, DriverTable& t, std::string* error) {
#define GMP_DLSYM(member, base, per_thread, abi)                               \
  {                                                                            \
    void* p = dlsym(handle, #member);                                          \
    if (p == nullptr && !allow_missing) {                                      \
      *error = "dlsym(\"" #member "\") failed";                                \
      return false;                                                            \
    }                                                                          \
    assign(t.member, p);                                                       \
  }
  GMP_DRIVER_ENTRIES(GMP_DLSYM)
#undef GMP_DLSYM
  return true;
}

}  // namespace

// The version the loaders ask for: options.cuda_version, or min(CUDA_VERSION, driver version)
// as a CUDA runtime does (a version above the driver's is refused by cuGetProcAddress).
int pick_version(GetProcV2 resolver, const LoadOptions& options) {
  if (options.cuda_version != 0) return options.cuda_version;
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  int driver = 0;
  if (resolver("cuDriverGetVersion", &p, 2020, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
      p != nullptr && reinterpret_cast<decltype(&::cuDriverGetVersion)>(p)(&driver) == CUDA_SUCCESS &&
      driver > 0 && driver < CUDA_VERSION) {
    return driver;
  }
  return CUDA_VERSION;
}

bool load_driver(LoadMode mode, DriverTable& t, std::string* error, LoadOptions options) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = std::string("dlopen(libcuda.so.1) failed: ") + (why != nullptr ? why : "?");
    return false;
  }
  bool ok = false;
  switch (mode) {
    case LoadMode::CudartStyle: {
      t.how = "cudart-style";
      auto resolver = reinterpret_cast<GetProcV2>(dlsym(handle, "cuGetProcAddress_v2"));
      if (resolver == nullptr) {
        *error = "dlsym(\"cuGetProcAddress_v2\") failed";
        return false;
      }
      ok = resolve_all(resolver, pick_version(resolver, options), options.allow_missing, t, error);
      break;
    }
    case LoadMode::Dlsym:
      t.how = "dlsym";
      ok = dlsym_all(handle, options.allow_missing, t, error);
      break;
    case LoadMode::SelfLookup: {
      t.how = "self-lookup";
      auto legacy = reinterpret_cast<GetProcV1>(dlsym(handle, "cuGetProcAddress"));
      if (legacy == nullptr) {
        *error = "dlsym(\"cuGetProcAddress\") failed";
        return false;
      }
      void* p = nullptr;
      const CUresult r = legacy("cuGetProcAddress", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT);
      if (r != CUDA_SUCCESS || p == nullptr) {
        *error = "cuGetProcAddress(\"cuGetProcAddress\", 12000) failed: " +
                 std::to_string(static_cast<int>(r));
        return false;
      }
      auto resolver = reinterpret_cast<GetProcV2>(p);
      ok = resolve_all(resolver, pick_version(resolver, options), options.allow_missing, t, error);
      break;
    }
  }
  if (!ok) return false;
  assign(t.fakecuda_alloc_untracked, dlsym(handle, "fakecuda_alloc_untracked"));
  assign(t.fakecuda_raise_in, dlsym(handle, "fakecuda_raise_in"));
  if (options.require_fake_hooks && t.fakecuda_alloc_untracked == nullptr) {
    *error = "dlsym(\"fakecuda_alloc_untracked\") failed: is libcuda.so.1 the fake driver?";
    return false;
  }
  return true;
}

CUcontext make_primary_context_current(const DriverTable& t) {
  CK(t.cuInit(0));
  CUdevice dev = -1;
  CK(t.cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  CK(t.cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(t.cuCtxSetCurrent(ctx));
  return ctx;
}

}  // namespace gmp
