// The stack capture's per-thread caches (stack_capture.cpp, python_frames.cpp): what this thread
// interned last, so that a loop's allocations find their frames and stacks in lines this thread
// keeps hot instead of probing the process-wide tables.
//
// They live in pages mapped at a thread's first capture and unmapped when it exits, not in TLS: the
// shim has initial-exec TLS, so a copy that is dlopen'ed instead of preloaded must take its whole
// TLS block from glibc's small static surplus, and 10 KiB of caches would not fit there.
#pragma once

#include <cstdint>

namespace gmp::shim {

// A Python frame as the frame tables key it (python_frames.cpp): its code object, the code's file
// and name string objects, and the instruction's byte offset.
struct PyFrameKey {
  const char* code;
  const char* file;
  const char* name;
  int offset;
  bool operator==(const PyFrameKey&) const = default;
};

// One Python frame at one depth of the last capture.
struct PyFrameAtDepth {
  PyFrameKey key;
  uint32_t id;  // 0: empty
};

// A stack interned by this thread: exactly the frames its id was given for.
struct CachedStack {
  static constexpr uint32_t kMaxFrames = 16;  // a tensor's Python frames, or a native stack, at the default depth
  uint32_t id;  // 0: empty
  uint32_t count;
  uint64_t frames[kMaxFrames];
};

struct ThreadCaches {
  static constexpr uint32_t kDepths = 32;
  static constexpr uint32_t kStacks = 64;  // a power of two
  PyFrameAtDepth frames_by_depth[kDepths];
  CachedStack stacks[kStacks];
};

// The calling thread's caches; nullptr when no memory could be mapped, or once the thread is
// exiting (captures then go to the shared tables, as they would with no cache).
ThreadCaches* thread_caches();

}  // namespace gmp::shim
