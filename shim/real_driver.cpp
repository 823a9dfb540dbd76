#include "real_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

// Our wrappers, referred to by their exported names without pulling in cuda.h's declarations.
#define GMP_DECLARE_WRAPPER(name) extern "C" void gmp_wrapper_##name() __asm__(#name);
GMP_WRAPPED_ENTRY_POINTS(GMP_DECLARE_WRAPPER)
#undef GMP_DECLARE_WRAPPER

namespace gmp::shim {
namespace {

constexpr const char* kNames[kEntryCount] = {
#define GMP_NAME(name) #name,
    GMP_WRAPPED_ENTRY_POINTS(GMP_NAME) GMP_HELPER_ENTRY_POINTS(GMP_NAME)
#undef GMP_NAME
};

void* const kWrappers[kWrappedCount] = {
#define GMP_WRAPPER_PTR(name) reinterpret_cast<void*>(&gmp_wrapper_##name),
    GMP_WRAPPED_ENTRY_POINTS(GMP_WRAPPER_PTR)
#undef GMP_WRAPPER_PTR
};

std::atomic<void*> g_real[kEntryCount];
std::atomic<bool> g_resolved{false};
std::atomic<RealDlsym> g_real_dlsym{nullptr};

}  // namespace

RealDlsym real_dlsym() {
  RealDlsym f = g_real_dlsym.load(std::memory_order_acquire);
  if (f == nullptr) {
    // dlvsym is not interposed by us, so this cannot recurse into our dlsym.
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    f = reinterpret_cast<RealDlsym>(p);
    g_real_dlsym.store(f, std::memory_order_release);
  }
  return f;
}

bool ensure_driver(void* hint) {
  if (g_resolved.load(std::memory_order_acquire)) return true;
  // RTLD_NOLOAD: only a driver the process already loaded; we never load one ourselves.
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) {
    if (hint == nullptr || hint == RTLD_DEFAULT || hint == RTLD_NEXT) return false;
    handle = hint;
  }
  RealDlsym lookup = real_dlsym();
  for (int i = 0; i < kEntryCount; ++i) {
    void* p = lookup(handle, kNames[i]);
    // A process linked with -lcuda has the driver in its global scope behind us.
    if (p == nullptr) p = lookup(RTLD_NEXT, kNames[i]);
    if (i < kWrappedCount && p == kWrappers[i]) p = nullptr;  // never route to ourselves
    g_real[i].store(p, std::memory_order_relaxed);
  }
  // A driver always exports its resolver; a library that merely has a cu* name does not count.
  if (g_real[static_cast<int>(Entry::cuGetProcAddress_v2)].load() == nullptr &&
      g_real[static_cast<int>(Entry::cuGetProcAddress)].load() == nullptr) {
    for (auto& p : g_real) p.store(nullptr, std::memory_order_relaxed);
    return false;
  }
  g_resolved.store(true, std::memory_order_release);
  return true;
}

void* real(Entry e) {
  void* p = g_real[static_cast<int>(e)].load(std::memory_order_relaxed);
  if (p == nullptr && !g_resolved.load(std::memory_order_acquire) && ensure_driver(nullptr)) {
    p = g_real[static_cast<int>(e)].load(std::memory_order_relaxed);
  }
  return p;
}

void* route(void* p) {
  if (p == nullptr) return p;
  for (int i = 0; i < kWrappedCount; ++i) {
    if (g_real[i].load(std::memory_order_relaxed) == p) return kWrappers[i];
  }
  return p;
}

bool wrapped_entry_for_name(const char* name, Entry* out) {
  if (name == nullptr || name[0] != 'c' || name[1] != 'u') return false;
  for (int i = 0; i < kWrappedCount; ++i) {
    if (std::strcmp(name, kNames[i]) == 0) {
      *out = static_cast<Entry>(i);
      return true;
    }
  }
  return false;
}

void* wrapper(Entry e) { return kWrappers[static_cast<int>(e)]; }

}  // namespace gmp::shim

namespace gmp::shim {

int only_device() {
  // -2: not asked yet. The count is fixed once the driver is initialised, which it is by the time
  // any allocation wrapper runs.
  static std::atomic<int> cached{-2};
  int v = cached.load(std::memory_order_relaxed);
  if (v == -2) {
    using Fn = int (*)(int*);
    auto count = reinterpret_cast<Fn>(real(Entry::cuDeviceGetCount));
    int n = 0;
    v = count != nullptr && count(&n) == 0 && n == 1 ? 0 : -1;
    cached.store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace gmp::shim
