#include "stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <string>

#include "../collector/seam.h"
#include "markers.h"
#include "python_frames.h"
#include "thread_caches.h"
#include "real_driver.h"
#include "unwinder.h"

namespace gmp::shim {
namespace {

constexpr uint32_t kMaxDepth = kMaxUnwindFrames;

using Backtrace = int (*)(void**, int);

// Stacks are walked by the shim's own walker (unwinder.h); a stack with a frame beyond it (a signal
// frame, code without unwind info) goes to libunwind's unw_backtrace, which walks DWARF unwind
// tables with a per-thread cache: several times faster than glibc's backtrace(), which goes
// through libgcc's unwinder (on an H100 host, 16 frames cost about 2-4 us per allocation with
// glibc's and a few hundred ns with libunwind's). The build puts a copy beside the shim, for
// machines without libunwind; the system's is next, glibc's the fallback. Loaded at run time, so
// the shim keeps no link dependency.
Backtrace load_unw_backtrace(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return h != nullptr ? reinterpret_cast<Backtrace>(real_dlsym()(h, "unw_backtrace")) : nullptr;
}

Backtrace resolve_backtrace() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&load_unw_backtrace), &self) != 0 && self.dli_fname != nullptr) {
    std::string beside(self.dli_fname);
    beside.resize(beside.rfind('/') + 1);  // npos + 1 == 0: no directory, the bare name below
    beside += "libunwind.so.8";
    if (Backtrace fn = load_unw_backtrace(beside.c_str())) {
      log_info("call stacks: libunwind from " + beside);
      return fn;
    }
  }
  if (Backtrace fn = load_unw_backtrace("libunwind.so.8")) {
    log_info("call stacks: the system's libunwind.so.8");
    return fn;
  }
  log_info("call stacks: glibc backtrace() (libunwind.so.8 not found; stacks cost more)");
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

// Said once per process in gpumemprof.log (at info level): the first code the shim's walker could
// not step out of, which sends every stack through it to libunwind at several times the cost.
void note_walker_gave_up() {
  static std::atomic<bool> said{false};
  if (said.load(std::memory_order_relaxed) || said.exchange(true)) return;
  const uint64_t pc = unwinder_beyond_pc();
  Dl_info where{};
  if (pc != 0 && dladdr(reinterpret_cast<void*>(pc - 1), &where) != 0 && where.dli_fname != nullptr) {
    log_info(
        fmt::format("call stacks: the shim's walker cannot step out of {}+0x{:x}; libunwind walks stacks through it",
                    where.dli_fname, pc - reinterpret_cast<uintptr_t>(where.dli_fbase)));
  } else {
    log_info("call stacks: a frame the shim's walker cannot step out of; libunwind walks such stacks");
  }
}

// This thread's last stack ids: allocations from one place in a loop capture the same stack, and
// comparing it with the last one's record costs less than finding it in the table.
struct LastStacks {
  uint32_t native;  // capture_stack's
  uint32_t python;  // capture_python_stack's
};
__attribute__((tls_model("initial-exec"))) thread_local LastStacks t_last{};

// A fold of frames into one of `sets` sets (a power of two): the fold is a sum of independent
// multiplies (no chain through the frames), mixed once here.
size_t set_of(uint64_t fold, size_t sets) {
  fold = (fold ^ (fold >> 29)) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(fold >> 50) & (sets - 1);
}

// The set of a walk: from its first frames only, known before the walk is done.
size_t walk_set(const PythonFrameRef* walked, size_t n) {
  uint64_t fold = 0;
  for (size_t i = 0; i < n && i < WalkSet::kKeyFrames; ++i) {
    fold += (reinterpret_cast<uintptr_t>(walked[i].code) ^ walked[i].instr) * (2 * i + 1);
  }
  return set_of(fold, ThreadCaches::kWalkSets);
}

// A capture's walk set, found by WalkHint's callback while the walk goes on.
struct WalkLookup {
  ThreadCaches* caches;
  WalkSet* set = nullptr;
};

// WalkHint's callback: the set, and the first line of each of its ways asked for (what the
// comparison reads first; the rest of a way that matches so far is read in order, and found by
// the hardware's prefetcher).
void fetch_walk_set(const PythonFrameRef* walked, size_t n, void* arg) {
  auto* lookup = static_cast<WalkLookup*>(arg);
  lookup->set = &lookup->caches->walks[walk_set(walked, n)];
  for (const CachedWalk& w : lookup->set->way) __builtin_prefetch(&w);
}

bool same_walk(const CachedWalk& w, const PythonFrameRef* walked, size_t n) {
  if (w.id == 0 || w.count != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (w.frames[i].code != walked[i].code || w.frames[i].instr != walked[i].instr) return false;
  }
  return true;
}

size_t cache_set(const uint64_t* frames, size_t count) {
  uint64_t fold = count;
  for (size_t i = 0; i < count; ++i) fold += frames[i] * (2 * i + 1);
  return set_of(fold, ThreadCaches::kStackSets);
}

// A program allocates from a few dozen to a few hundred places in turn (a model's layers), so the
// thread's last stack is rarely the one before; its recent stacks (thread_caches.h), found by a
// cheap fold and one comparison, spare the shared table's hash of every frame and its cache misses
// (a tensor pair from 32 places in turn on the fake torch: about 700 ns of the bridge's cost became
// 440). A hit is the id the table would give: an entry holds exactly the frames its id was interned
// for, and ids are never reused (the table is never cleared).
uint32_t intern_stack(const uint64_t* frames, size_t count, uint32_t& last) {
  const uint32_t bytes = static_cast<uint32_t>(count * sizeof(uint64_t));
  ThreadCaches* caches = count <= CachedStack::kMaxFrames ? thread_caches() : nullptr;
  if (caches == nullptr) return last = intern_stack_frames(frames, bytes, last);
  auto& set = caches->stacks[cache_set(frames, count)];
  if (const CachedStack* hit = set.find([&](const CachedStack& c) {
        return c.id != 0 && c.count == count && std::memcmp(c.frames, frames, bytes) == 0;
      })) {
    return last = hit->id;
  }
  last = intern_stack_frames(frames, bytes, last);
  if (last != 0) {
    CachedStack& c = set.replace();
    c.id = last;
    c.count = static_cast<uint32_t>(count);
    std::memcpy(c.frames, frames, bytes);
  }
  return last;
}

// The allocating thread's call stack as an intern id: native return addresses, then Python frames
// when the thread runs CPython (python_frames.h). 0 when `depth` is 0, or when the stack could not
// be interned.
uint32_t capture_stack(uint32_t depth, bool python) {
  if (depth == 0) return 0;
  if (depth > kMaxDepth) depth = kMaxDepth;
  uint64_t frames[2 * kMaxDepth];
  void** native = reinterpret_cast<void**>(frames);
  static_assert(sizeof(void*) == sizeof(uint64_t));
  const Backtrace fallback = native_backtrace();  // resolved and logged at the first stack, as before
  int n = unwind_stack(frames, static_cast<int>(depth));
  if (n < 0) {
    note_walker_gave_up();
    n = fallback(native, static_cast<int>(depth));
  }
  if (n < 0) n = 0;
  size_t count = static_cast<size_t>(n);
  if (python) count += capture_python_frames(frames + count, depth);
  if (count == 0) return 0;
  return intern_stack(frames, count, t_last.native);
}

// A tensor's stack, Python frames only (up to `depth`): for a framework's tensor, whose native frames
// are all inside the framework, the Python lines are the call site. 0 outside CPython or when
// `depth` is 0. Found first by the walk itself (ThreadCaches::walks), so a stack this thread made
// before costs the walk and one comparison.
uint32_t capture_python_stack(uint32_t depth) {
  if (depth == 0) return 0;
  if (depth > kMaxDepth) depth = kMaxDepth;
  ThreadCaches* caches = thread_caches();
  WalkLookup lookup{caches};
  const WalkHint hint{WalkSet::kKeyFrames, &fetch_walk_set, &lookup};
  PythonFrameRef walked[kMaxDepth];
  const size_t n = walk_python_frames(walked, depth, caches != nullptr ? &hint : nullptr);
  if (n == 0) return 0;
  WalkSet* set = n <= CachedWalk::kMaxFrames ? lookup.set : nullptr;  // set by the hint for any n > 0
  const uint64_t now = caches != nullptr ? ++caches->walks_done : 0;
  if (set != nullptr) {
    for (CachedWalk& w : set->way) {
      if (same_walk(w, walked, n)) {
        w.used = now;
        return t_last.python = w.id;
      }
    }
  }
  uint64_t frames[kMaxDepth];
  const size_t count = python_frame_ids(walked, n, frames);
  if (count == 0) return 0;
  const uint32_t id = intern_stack(frames, count, t_last.python);
  if (set != nullptr && id != 0 && count == n) {  // every frame walked is a frame of the stack
    CachedWalk* oldest = &set->way[0];
    for (CachedWalk& w : set->way) {
      if (w.used < oldest->used) oldest = &w;
    }
    oldest->id = id;
    oldest->count = static_cast<uint32_t>(n);
    oldest->used = now;
    for (size_t i = 0; i < n; ++i) oldest->frames[i] = {walked[i].code, walked[i].instr};
  }
  return id;
}

}  // namespace

bool prepare_allocation_event(uint32_t* stack) {
  *stack = 0;
  Session* s;
  if (!catch_up(&s)) return false;
  if (s == nullptr) return true;  // session_record will find no session either
  *stack =
      capture_stack(g_stack_depth.load(std::memory_order_relaxed), g_python_stacks.load(std::memory_order_relaxed));
  return true;
}

bool prepare_framework_event(uint32_t* stack) {
  *stack = 0;
  Session* s;
  if (!catch_up(&s)) return false;
  if (s != nullptr && g_tensor_native_stacks.load(std::memory_order_relaxed)) {  // GPUMEMPROF_TENSOR_STACKS=all
    *stack = capture_stack(g_stack_depth.load(std::memory_order_relaxed),
                           g_python_stacks.load(std::memory_order_relaxed));
  } else if (s != nullptr && g_python_stacks.load(std::memory_order_relaxed)) {
    *stack = capture_python_stack(g_stack_depth.load(std::memory_order_relaxed));
  }
  return true;
}

}  // namespace gmp::shim
