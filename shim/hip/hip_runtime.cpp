#include "hip_runtime.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "../real_driver.h"  // real_dlsym

#define GMP_DECLARE_WRAPPER(name) extern "C" void gmp_hip_wrapper_##name() __asm__(#name);
GMP_HIP_WRAPPED(GMP_DECLARE_WRAPPER)
#undef GMP_DECLARE_WRAPPER

namespace gmp::shim::hip {
namespace {

constexpr const char* kNames[kEntryCount] = {
#define GMP_NAME(name) #name,
    GMP_HIP_WRAPPED(GMP_NAME) GMP_HIP_HELPERS(GMP_NAME)
#undef GMP_NAME
};

void* const kWrappers[kWrappedCount] = {
#define GMP_WRAPPER_PTR(name) reinterpret_cast<void*>(&gmp_hip_wrapper_##name),
    GMP_HIP_WRAPPED(GMP_WRAPPER_PTR)
#undef GMP_WRAPPER_PTR
};

bool is_hsa(int i) { return std::strncmp(kNames[i], "hsa_", 4) == 0; }

// One runtime library: its sonames across ROCm releases and the export that proves it is the runtime.
struct Library {
  const char* sonames[5];
  const char* proof;
  bool hsa;
  std::atomic<bool> resolved{false};
};
Library g_hip{{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so", nullptr},
              "hipGetDeviceCount", false};
Library g_hsa{{"libhsa-runtime64.so.1", "libhsa-runtime64.so", nullptr, nullptr, nullptr}, "hsa_init", true};

std::atomic<void*> g_real[kEntryCount];

bool resolve(Library& lib, void* hint) {
  if (lib.resolved.load(std::memory_order_acquire)) return true;
  const RealDlsym lookup = real_dlsym();
  void* handle = nullptr;
  for (const char* const* n = lib.sonames; *n != nullptr && handle == nullptr; ++n) {
    handle = dlopen(*n, RTLD_LAZY | RTLD_NOLOAD);
  }
  if (handle == nullptr && hint != nullptr && hint != RTLD_DEFAULT && hint != RTLD_NEXT) handle = hint;
  // A program linked with the runtime has it in its global scope behind us.
  auto find = [&](const char* name) {
    void* p = handle != nullptr ? lookup(handle, name) : nullptr;
    return p != nullptr ? p : lookup(RTLD_NEXT, name);
  };
  if (find(lib.proof) == nullptr) return false;
  for (int i = 0; i < kEntryCount; ++i) {
    if (is_hsa(i) != lib.hsa) continue;
    void* p = find(kNames[i]);
    if (i < kWrappedCount && p == kWrappers[i]) p = nullptr;  // never route to ourselves
    g_real[i].store(p, std::memory_order_relaxed);
  }
  lib.resolved.store(true, std::memory_order_release);
  return true;
}

}  // namespace

void* real(Entry e) {
  const int i = static_cast<int>(e);
  void* p = g_real[i].load(std::memory_order_relaxed);
  if (p == nullptr) {
    Library& lib = is_hsa(i) ? g_hsa : g_hip;
    if (!lib.resolved.load(std::memory_order_acquire) && resolve(lib, nullptr)) {
      p = g_real[i].load(std::memory_order_relaxed);
    }
  }
  return p;
}

bool hip_loaded() { return g_hip.resolved.load(std::memory_order_acquire) || resolve(g_hip, nullptr); }

void* route(void* p) {
  if (p == nullptr) return p;
  for (int i = 0; i < kWrappedCount; ++i) {
    if (g_real[i].load(std::memory_order_relaxed) == p) return kWrappers[i];
  }
  return p;
}

void* wrapper_for_lookup(void* handle, const char* name) {
  if (name == nullptr || !(std::strncmp(name, "hip", 3) == 0 || std::strncmp(name, "hsa_", 4) == 0)) return nullptr;
  for (int i = 0; i < kWrappedCount; ++i) {
    if (std::strcmp(name, kNames[i]) != 0) continue;
    if (!resolve(is_hsa(i) ? g_hsa : g_hip, handle)) return nullptr;
    // Anything but the runtime's own function (another library's symbol of that name) is left to
    // the plain lookup.
    void* p = real_dlsym()(handle, name);
    return p != nullptr && p == g_real[i].load(std::memory_order_relaxed) ? kWrappers[i] : nullptr;
  }
  return nullptr;
}

}  // namespace gmp::shim::hip
