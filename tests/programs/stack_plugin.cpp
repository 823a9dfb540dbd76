// libstack_plugin.so: a library prog_stacks dlopens after it has already allocated, so the
// profiler meets it only when the module map changes. Its call chain has known names for the
// symbolizer's integration test: plugin_alloc_entry -> plugin_alloc_level1 -> plugin_alloc_level2.
// Built with -fno-inline and without sibling calls, so each function is its own frame.
// The driver's cuMemAlloc_v2 (the profiler's wrapper, as the program resolved it) is called from
// here directly, so the innermost frame outside the profiler is plugin_alloc_level2.
#include <cuda.h>

#include <cstddef>

namespace {
using Alloc = CUresult (*)(CUdeviceptr* ptr, size_t size);
}

extern "C" {

__attribute__((noinline)) CUresult plugin_alloc_level2(Alloc alloc, CUdeviceptr* ptr, size_t size) {
  const CUresult r = alloc(ptr, size);
  asm volatile("" ::: "memory");  // work after the call keeps it a call, not a jump
  return r;
}

__attribute__((noinline)) CUresult plugin_alloc_level1(Alloc alloc, CUdeviceptr* ptr, size_t size) {
  const CUresult r = plugin_alloc_level2(alloc, ptr, size);
  asm volatile("" ::: "memory");
  return r;
}

__attribute__((visibility("default"), noinline)) CUresult plugin_alloc_entry(Alloc alloc, CUdeviceptr* ptr,
                                                                             size_t size) {
  const CUresult r = plugin_alloc_level1(alloc, ptr, size);
  asm volatile("" ::: "memory");
  return r;
}

}  // extern "C"
