// A shared library with a known call chain for the symbolizer's tests, built with -g and without
// inlining: fixture_exported_level1 (exported) -> fixture_static_level2 (static: only in .symtab)
// -> fixture_ns::Widget::capture (C++: mangled) -> backtrace(). The test dlopens it, calls the
// chain and symbolises the return addresses it captured.
#include <execinfo.h>

namespace fixture_ns {
struct Widget {
  __attribute__((noinline)) static int capture(void** frames, int max);
};

int Widget::capture(void** frames, int max) {
  const int n = backtrace(frames, max);
  asm volatile("" ::: "memory");  // keeps the call to backtrace() from being a tail call
  return n;
}
}  // namespace fixture_ns

__attribute__((noinline)) static int fixture_static_level2(void** frames, int max) {
  const int n = fixture_ns::Widget::capture(frames, max);
  asm volatile("" ::: "memory");
  return n;
}

extern "C" __attribute__((visibility("default"), noinline)) int fixture_exported_level1(void** frames, int max) {
  const int n = fixture_static_level2(frames, max);
  asm volatile("" ::: "memory");
  return n;
}

// An inlined frame: always_inline is inlined even under -fno-inline, so backtrace()'s return
// address lies in inlined_capture's code inside fixture_inlined_level1 (one address, two frames).
namespace fixture_ns {
__attribute__((always_inline)) inline int inlined_capture(void** frames, int max) {
  const int n = backtrace(frames, max);
  asm volatile("" ::: "memory");
  return n;
}
}  // namespace fixture_ns

extern "C" __attribute__((visibility("default"), noinline)) int fixture_inlined_level1(void** frames, int max) {
  const int n = fixture_ns::inlined_capture(frames, max);
  asm volatile("" ::: "memory");
  return n;
}
