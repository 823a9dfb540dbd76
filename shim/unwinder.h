// The shim's own x86_64 stack walker: the same frames as libunwind's unw_backtrace (its fast
// trace, docs/attribution.md), at a fraction of the cost. Each thread keeps, per return address,
// how to step out of that frame (the CFA from rsp or rbp plus an offset, the return address at
// CFA-8, rbp unchanged or saved at CFA+offset), read once from the object's .eh_frame; and the
// stack words its last walk read, so that a walk from the same place over the same words is not
// repeated. Frames of any other shape (signal frames, CFI expressions, code without unwind info)
// are left to libunwind: the walk then reports that it cannot help.
#pragma once

#include <cstdint>

namespace gmp::shim {

// The return addresses of the caller's stack, as unw_backtrace (libunwind 1.6, the copy the build
// puts beside the shim) gives them, innermost first: the first is inside the caller of
// unwind_stack.
// Returns how many (at most `max`, at most kMaxUnwindFrames), or -1 when a frame is beyond this
// walker (then `out` holds nothing useful and the caller unwinds with libunwind).
constexpr int kMaxUnwindFrames = 128;
int unwind_stack(uint64_t* out, int max);

// The return address this thread's last walk could not step out of (it returned -1 there), else 0.
uint64_t unwinder_beyond_pc();

// Called after every dlclose(): what was learnt about return addresses may now describe code that
// is gone, so every thread forgets it before its next walk.
void unwinder_objects_unloaded();

}  // namespace gmp::shim
