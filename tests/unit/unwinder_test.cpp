// The shim's stack walker (shim/unwinder.h) against libunwind's unw_backtrace, the unwinder it
// stands in for: on every path below both must give the same frames, whether the walk was done
// afresh or reused from the thread's last one.
#include "../../shim/unwinder.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

extern "C" int chain_fp(int depth, int (*leaf)(void*), void* arg);
extern "C" int chain_nofp(int depth, int (*leaf)(void*), void* arg);

namespace {

using gmp::shim::unwind_stack;
using Capture = int (*)(uint64_t*, int);

Capture unw_backtrace_fn() {
  static Capture fn = [] {
    void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return h != nullptr ? reinterpret_cast<Capture>(dlsym(h, "unw_backtrace")) : nullptr;
  }();
  return fn;
}

// One call instruction for both unwinders, so their first frames (inside `probe`) agree too.
__attribute__((noinline)) int probe(Capture capture, uint64_t* out, int max) {
  const int n = capture(out, max);
  asm volatile("" ::: "memory");
  return n;
}

struct Comparison {
  int max = 16;
  int repeats = 3;  // the second and later walks from one place are the reused ones
  int mismatches = 0;
  int walked = 0;   // captures the walker gave (the rest it left to libunwind)
  int total = 0;
  std::string first_failure;
  uint64_t beyond_pc = 0;  // unwinder_beyond_pc() after the last walk the walker gave up
};

std::string describe(const uint64_t* mine, int n, const uint64_t* theirs, int m) {
  std::string s = std::to_string(n) + " frames vs unw_backtrace's " + std::to_string(m) + ":";
  char line[64];
  for (int i = 0; i < std::max(n, m); ++i) {
    std::snprintf(line, sizeof line, "\n  %#lx %#lx", i < n ? mine[i] : 0ul, i < m ? theirs[i] : 0ul);
    s += line;
  }
  return s;
}

volatile int g_unwinders = 2;  // a loop the compiler cannot unroll: one call site for both

// Captures with both from the same frame, `repeats` times, and compares.
int compare_here(void* arg) {
  auto& c = *static_cast<Comparison*>(arg);
  for (int r = 0; r < c.repeats; ++r) {
    uint64_t frames[2][gmp::shim::kMaxUnwindFrames];
    int counts[2];
    for (int u = 0; u < g_unwinders; ++u) {
      counts[u] = probe(u == 0 ? &unwind_stack : unw_backtrace_fn(), frames[u], c.max);
    }
    const uint64_t *mine = frames[0], *theirs = frames[1];
    const int n = counts[0], m = counts[1];
    ++c.total;
    if (n < 0) {
      c.beyond_pc = gmp::shim::unwinder_beyond_pc();
      continue;
    }
    ++c.walked;
    if (n != m || !std::equal(mine, mine + n, theirs)) {
      if (c.mismatches++ == 0) c.first_failure = describe(mine, n, theirs, m);
    }
  }
  return 0;
}

int through_fp(int depth, Comparison& c) { return chain_fp(depth, &compare_here, &c); }
int through_nofp(int depth, Comparison& c) { return chain_nofp(depth, &compare_here, &c); }

class Unwinder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unw_backtrace_fn() == nullptr) GTEST_SKIP() << "libunwind.so.8 not found";
  }
};

TEST_F(Unwinder, SameFramesAsUnwBacktraceAtEveryDepthAndMax) {
  for (int max : {1, 2, 8, 16, 32, 128}) {
    Comparison c;
    c.max = max;
    for (int depth = 0; depth < 40; ++depth) {
      through_fp(depth, c);
      through_nofp(depth, c);
    }
    EXPECT_EQ(c.mismatches, 0) << "max " << max << ": " << c.first_failure;
    EXPECT_EQ(c.walked, c.total) << "max " << max << ": every frame of these chains is a standard one";
  }
}

// Same depth, same leaf, same stack pointer, different callers further out: the start of each
// walk is the same, so only the words the walk reads can tell the two stacks apart.
TEST_F(Unwinder, SameStartDifferentCallersIsNotReused) {
  Comparison c;
  c.repeats = 1;
  for (int round = 0; round < 50; ++round) {
    through_fp(10, c);
    through_nofp(10, c);
    through_fp(11, c);
    through_nofp(9, c);
  }
  EXPECT_EQ(c.mismatches, 0) << c.first_failure;
  EXPECT_EQ(c.walked, c.total);
}

// A deep recursion, captured with the largest depth: more frames than any buffer.
TEST_F(Unwinder, DeepRecursionFillsTheBuffer) {
  Comparison c;
  c.max = gmp::shim::kMaxUnwindFrames;
  through_nofp(300, c);
  EXPECT_EQ(c.mismatches, 0) << c.first_failure;
  EXPECT_EQ(c.walked, c.total);
}

// Between two walks from the same place, what lies on the stack further out changes: the
// recursion returns and re-enters through the other library at the same depth.
TEST_F(Unwinder, StackChangingBetweenCaptures) {
  Comparison c;
  c.repeats = 2;
  for (int depth = 0; depth < 30; ++depth) {
    (depth % 2 == 0 ? through_fp : through_nofp)(depth, c);
    (depth % 2 == 0 ? through_nofp : through_fp)(depth, c);
  }
  EXPECT_EQ(c.mismatches, 0) << c.first_failure;
}

TEST_F(Unwinder, ThreadsEachWalkTheirOwnStack) {
#ifdef __SANITIZE_THREAD__
  // libunwind's per-thread trace cache is freed by a thread-specific-data destructor whose mutex
  // call faults inside ThreadSanitizer's interceptor at thread exit (libunwind's, not the walker's).
  GTEST_SKIP() << "unw_backtrace in threads that exit: not under ThreadSanitizer";
#endif
  std::vector<std::thread> threads;
  std::vector<Comparison> results(4);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int depth = 0; depth < 20; ++depth) {
        ((depth + static_cast<int>(t)) % 2 == 0 ? through_fp : through_nofp)(depth + static_cast<int>(t), results[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& c : results) {
    EXPECT_EQ(c.mismatches, 0) << c.first_failure;
    EXPECT_EQ(c.walked, c.total);
  }
}

TEST_F(Unwinder, AfterForkTheChildWalksItsCopy) {
  Comparison warm;
  through_fp(12, warm);  // the parent's thread state, inherited by the child
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Comparison c;
    for (int depth = 0; depth < 20; ++depth) {
      through_fp(depth, c);
      through_nofp(depth, c);
    }
    _exit(c.mismatches == 0 && c.walked == c.total ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

Comparison* g_in_handler = nullptr;

void handler(int) { chain_nofp(3, &compare_here, g_in_handler); }

// Inside a signal handler the walk meets the kernel's signal frame, which only libunwind steps
// through: the walker gives either the same frames (when it stops before that frame) or -1.
TEST_F(Unwinder, SignalHandlerFramesAreLeftToLibunwindOrTheSame) {
  for (int max : {4, 8, 32}) {
    Comparison c;
    c.max = max;
    g_in_handler = &c;
    struct sigaction sa {};
    sa.sa_handler = &handler;
    struct sigaction old {};
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    raise(SIGUSR1);
    sigaction(SIGUSR1, &old, nullptr);
    EXPECT_EQ(c.mismatches, 0) << "max " << max << ": " << c.first_failure;
    if (max == 32) {
      EXPECT_LT(c.walked, c.total) << "a walk through the signal frame is libunwind's";
      // Where the walker gave up: the kernel's return to the interrupted code, in libc.
      Dl_info where{};
      ASSERT_NE(dladdr(reinterpret_cast<void*>(c.beyond_pc - 1), &where), 0);
      EXPECT_NE(std::string(where.dli_fname).find("libc.so"), std::string::npos) << where.dli_fname;
    }
  }
}

// After an unload the thread forgets its rules and its last walk, and walks afresh.
TEST_F(Unwinder, UnloadStartsAfresh) {
  Comparison c;
  through_fp(8, c);
  gmp::shim::unwinder_objects_unloaded();
  through_fp(8, c);
  EXPECT_EQ(c.mismatches, 0) << c.first_failure;
  EXPECT_EQ(c.walked, c.total);
}

}  // namespace
