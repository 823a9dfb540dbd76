// A call chain for the unwinder's tests and benchmark (unwinder_test.cpp, stack_capture_bench.cpp):
// built twice, as libgmp_chain_fp.so with frame pointers and libgmp_chain_nofp.so without, and
// each link calls the other library's, so a chain mixes both kinds of frame as real programs do.
// CHAIN_SELF and CHAIN_OTHER name this copy's function and the other's.
#include <cstdint>

extern "C" int CHAIN_OTHER(int depth, int (*leaf)(void*), void* arg);

// Not inlined, not a tail call, and a local array on the stack, so every level is a frame of its
// own with a non-trivial size.
extern "C" __attribute__((noinline, visibility("default"))) int CHAIN_SELF(int depth, int (*leaf)(void*), void* arg) {
  volatile uint64_t local[4] = {static_cast<uint64_t>(depth), 0, 0, 0};
  const int r = depth <= 0 ? leaf(arg) : CHAIN_OTHER(depth - 1, leaf, arg);
  local[1] = static_cast<uint64_t>(r);
  asm volatile("" ::: "memory");
  return r + static_cast<int>(local[0] & 0);
}
