// What one allocation's call stack costs to capture and intern, by part: 16 native frames taken
// 30 levels down a call chain that alternates between a library with frame pointers and one
// without (tests/unit/stack_chain.cpp), with libunwind's unw_backtrace (what the shim used
// before), with glibc's backtrace(), and with the shim's walker (shim/unwinder.h) walking afresh
// or reusing its last walk; then interning the 16 frames (collector/intern_table.h), with and
// without the thread's last id as a hint. For medians and spread over interleaved rounds:
//   stack_capture_bench --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
//                       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdio>
#include <cstdlib>

#include "../../shim/unwinder.h"
#include "intern_table.h"

extern "C" int chain_fp(int depth, int (*leaf)(void*), void* arg);

namespace {

constexpr int kDepth = 30;   // levels of the chain below the benchmark's own frames
constexpr int kFrames = 16;  // the shim's default GPUMEMPROF_STACK_DEPTH

using Capture = int (*)(uint64_t*, int);

int unw_backtrace_frames(uint64_t* out, int max) {
  static const auto fn = [] {
    void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    auto f = h != nullptr ? reinterpret_cast<int (*)(void**, int)>(dlsym(h, "unw_backtrace")) : nullptr;
    if (f == nullptr) {
      std::fprintf(stderr, "stack_capture_bench: libunwind.so.8 not found\n");
      std::exit(1);
    }
    return f;
  }();
  return fn(reinterpret_cast<void**>(out), max);
}

int glibc_frames(uint64_t* out, int max) { return backtrace(reinterpret_cast<void**>(out), max); }

// Two places to capture from: alternating between them, no walk starts where the last one did,
// so the walker walks every frame (its rules are known after the first round).
__attribute__((noinline)) int capture_at_a(Capture c, uint64_t* out) {
  const int n = c(out, kFrames);
  asm volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int capture_at_b(Capture c, uint64_t* out) {
  const int n = c(out, kFrames);
  asm volatile("" ::: "memory");
  return n + 0 * static_cast<int>(out[0]);
}

struct Run {
  benchmark::State* state;
  Capture capture;
  bool alternate;  // between capture_at_a and capture_at_b; else always capture_at_a
};

int capture_loop(void* arg) {
  Run& run = *static_cast<Run*>(arg);
  uint64_t out[kFrames];
  unsigned i = 0;
  for (auto _ : *run.state) {
    const int n = (run.alternate && (++i & 1) != 0 ? capture_at_b : capture_at_a)(run.capture, out);
    benchmark::DoNotOptimize(n);
    if (n != kFrames) {
      run.state->SkipWithError("fewer frames than asked for");
      break;
    }
  }
  return 0;
}

void capture(benchmark::State& state, Capture c, bool alternate) {
  Run run{&state, c, alternate};
  chain_fp(kDepth, &capture_loop, &run);
}

void BM_UnwBacktrace(benchmark::State& state) { capture(state, &unw_backtrace_frames, true); }
void BM_GlibcBacktrace(benchmark::State& state) { capture(state, &glibc_frames, true); }
void BM_WalkerFresh(benchmark::State& state) { capture(state, &gmp::shim::unwind_stack, true); }
void BM_WalkerReused(benchmark::State& state) { capture(state, &gmp::shim::unwind_stack, false); }
BENCHMARK(BM_UnwBacktrace);
BENCHMARK(BM_GlibcBacktrace);
BENCHMARK(BM_WalkerFresh);
BENCHMARK(BM_WalkerReused);

// A 16-frame stack that is already in the table, as every allocation from a known place finds it.
struct Frames {
  uint64_t frames[kFrames];
  Frames() {
    for (int i = 0; i < kFrames; ++i) frames[i] = 0x7f0000001000ull + static_cast<uint64_t>(i) * 0x1234;
  }
};

void BM_Intern(benchmark::State& state) {
  Frames f;
  gmp::intern_table().intern(gmp::InternType::Stack, f.frames, sizeof f.frames);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gmp::intern_table().intern(gmp::InternType::Stack, f.frames, sizeof f.frames));
  }
}
void BM_InternWithLastId(benchmark::State& state) {
  Frames f;
  uint32_t last = gmp::intern_table().intern(gmp::InternType::Stack, f.frames, sizeof f.frames);
  for (auto _ : state) {
    last = gmp::intern_table().intern(gmp::InternType::Stack, f.frames, sizeof f.frames, last);
    benchmark::DoNotOptimize(last);
  }
}
BENCHMARK(BM_Intern);
BENCHMARK(BM_InternWithLastId);

}  // namespace

BENCHMARK_MAIN();
