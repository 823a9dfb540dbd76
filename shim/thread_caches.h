// The stack capture's per-thread caches (stack_capture.cpp, python_frames.cpp): the frames and
// stacks this thread interned lately, so that a loop's allocations find them in a few lines this
// thread keeps hot instead of probing the process-wide tables (megabytes, a cache miss a probe).
//
// They live in pages mapped at a thread's first capture and unmapped when it exits, not in TLS: the
// shim has initial-exec TLS, so a copy that is dlopen'ed instead of preloaded must take its whole
// TLS block from glibc's small static surplus, and 180 KiB of caches would not fit there.
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
};

// A set of two entries, the one hit last first: a loop that takes turns between two keys of one
// set keeps both, where a direct-mapped cache would miss on each.
template <typename Entry>
struct alignas(64) TwoWaySet {
  Entry way[2];

  template <typename Match>
  const Entry* find(Match&& match) {
    if (match(way[0])) return &way[0];
    if (!match(way[1])) return nullptr;
    const Entry hit = way[1];
    way[1] = way[0];
    way[0] = hit;
    return &way[0];
  }
  // The entry to fill after a miss: the older way goes.
  Entry& replace() {
    way[1] = way[0];
    return way[0];
  }
};

// A Python frame this thread looked up: its key's fields and id in 32 bytes, so that a set of two
// is one cache line.
struct CachedFrame {
  const char* code;
  const char* file;
  const char* name;
  int offset;
  uint32_t id;  // 0: empty
  bool holds(const PyFrameKey& k) const {
    return id != 0 && code == k.code && offset == k.offset && file == k.file && name == k.name;
  }
};
static_assert(sizeof(CachedFrame) == 32);

// What a frame of this thread was running when it was last seen: while the frame at `frame` runs
// the same code object at the same instruction, its id is the same, and the code object (cold
// memory, two cache lines a frame in a deep stack) need not be read again. The frame holds a
// reference to its code, so the code cannot have been freed and replaced at that address unless
// the frame was too (the same caveat as PyFrameKey: a new code at the old address, run by a frame
// at the old address at the old instruction).
struct FrameMemo {
  const char* frame;
  const char* code;
  uint64_t instr;  // the frame's instruction field as it is stored (python_frames.cpp)
  uint32_t id;     // 0: empty
};

// A stack interned by this thread: exactly the frames its id was given for.
struct CachedStack {
  static constexpr uint32_t kMaxFrames = 16;  // a tensor's Python frames, or a native stack, at the default depth
  uint32_t id;  // 0: empty
  uint32_t count;
  uint64_t frames[kMaxFrames];
};

// A Python stack this thread walked (python_frames.h), and the id of the stack its frames made:
// the same code objects at the same instructions make the same stack, so a hit needs neither the
// frames' ids nor the code objects (cold memory in a deep stack). The caveat of FrameMemo holds
// (a code object freed and another made at its address, run at the same instruction).
struct CachedWalk {
  static constexpr uint32_t kMaxFrames = 16;  // a tensor's Python frames at the default depth
  struct Frame {
    const char* code;
    uint64_t instr;
  };
  uint32_t id;  // 0: empty
  uint32_t count;
  uint64_t used;  // the thread's capture count when it was last hit or filled
  Frame frames[kMaxFrames];
};

// The walks whose first kKeyFrames frames hash alike. Known before the walk is done, the set is
// fetched while the walk goes on (a set is touched about once a token: it is cold by then); the
// least recently used way goes.
struct alignas(64) WalkSet {
  static constexpr uint32_t kKeyFrames = 4;
  static constexpr uint32_t kWays = 4;
  CachedWalk way[kWays];
};

// Sized for a decoder's token (HF Llama's generate: about 400 allocations a token from one to two
// hundred distinct stacks of up to 16 Python frames, a few hundred distinct frames): 180 KiB a
// thread that allocates, mapped at its first capture; the sets that are used are what is touched.
struct alignas(64) ThreadCaches {
  static constexpr uint32_t kWalkSets = 128;  // powers of two
  static constexpr uint32_t kFrameSets = 256;
  static constexpr uint32_t kStackSets = 64;
  static constexpr uint32_t kMemos = 256;
  uint64_t walks_done;
  WalkSet walks[kWalkSets];
  FrameMemo memos[kMemos];
  TwoWaySet<CachedFrame> frames[kFrameSets];
  TwoWaySet<CachedStack> stacks[kStackSets];
};

// The calling thread's caches; nullptr when no memory could be mapped, or once the thread is
// exiting (captures then go to the shared tables, as they would with no cache).
ThreadCaches* thread_caches();

}  // namespace gmp::shim
