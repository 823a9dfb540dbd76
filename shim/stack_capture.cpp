#include "stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <atomic>

#include "../collector/intern_table.h"
#include "python_frames.h"
#include "real_driver.h"

namespace gmp::shim {
namespace {

constexpr uint32_t kMaxDepth = 128;

using Backtrace = int (*)(void**, int);

// libunwind's unw_backtrace walks DWARF unwind tables with a per-process cache: several times
// faster than glibc's backtrace(), which goes through libgcc's unwinder. Loaded at run time, so
// the shim keeps no link dependency; glibc's is the fallback.
Backtrace resolve_backtrace() {
  if (void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
    if (void* fn = real_dlsym()(h, "unw_backtrace")) return reinterpret_cast<Backtrace>(fn);
  }
  return &backtrace;
}

Backtrace native_backtrace() {
  static std::atomic<Backtrace> fn{nullptr};
  Backtrace f = fn.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = resolve_backtrace();  // two threads may both resolve; they store the same function
    fn.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace

uint32_t capture_stack(uint32_t depth, bool python) {
  if (depth == 0) return 0;
  if (depth > kMaxDepth) depth = kMaxDepth;
  uint64_t frames[2 * kMaxDepth];
  void** native = reinterpret_cast<void**>(frames);
  static_assert(sizeof(void*) == sizeof(uint64_t));
  int n = native_backtrace()(native, static_cast<int>(depth));
  if (n < 0) n = 0;
  size_t count = static_cast<size_t>(n);
  if (python) count += capture_python_frames(frames + count, depth);
  if (count == 0) return 0;
  return intern_table().intern(InternType::Stack, frames, static_cast<uint32_t>(count * sizeof(uint64_t)));
}

}  // namespace gmp::shim
