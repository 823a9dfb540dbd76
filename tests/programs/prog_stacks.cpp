// prog_stacks MODE: known call chains, ranges, marks and pause/resume through include/gpumemprof.h,
// for the attribution integration tests (tests/integration/attribution_test.cpp). Built with -g,
// frame pointers and no inlining, so every named function below is a frame of its own.
//
//   chains  alloc_in_main_chain_b -> alloc_in_main_chain_a allocates 3 MiB; then libstack_plugin.so
//           (next to this program) is dlopened and plugin_alloc_entry -> plugin_alloc_level1 ->
//           plugin_alloc_level2 allocates 5 MiB; the plugin is dlclosed and alloc_after_unload
//           allocates 1 MiB. Nothing is freed.
//   ranges  main allocates 1 MiB; then, in lock step, thread 1: outer { 10 MiB (A), inner { 20 MiB,
//           free A } } and thread 2, while outer is open: worker { 5 MiB }, popped after thread 1
//           is done. Allocated: 1, 11, 16 (worker), 36, 26.
//   marks   1 MiB; mark start; 100 MiB (X); mark after_a; 50 MiB; free X; mark after_b;
//           300 MiB and its free; 30 MiB; mark end.
//   pause   1 MiB (A); pause; 7 MiB (B, not recorded); free A; resume; 3 MiB (C); free B; free C.
// Prints "ok" and exits 0; any failed driver call exits 1. Without the profiler loaded every
// gpumemprof_* call does nothing and the program behaves the same.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <semaphore>
#include <string>
#include <thread>

#include "check.h"
#include "driver_loader.h"
#include "gpumemprof.h"

namespace {

constexpr size_t MiB = 1ull << 20;

DriverTable t;
CUcontext g_ctx = nullptr;  // device 0's primary context, made current in every thread

CUdeviceptr alloc(size_t size) {
  CUdeviceptr p = 0;
  CK(t.cuMemAlloc_v2(&p, size));
  return p;
}

void release(CUdeviceptr p) { CK(t.cuMemFree_v2(p)); }

void init() {
  std::string error;
  gmp::LoadOptions options;
  options.require_fake_hooks = false;
  options.allow_missing = true;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error, options)) throw gmp::CheckFailure(error);
  g_ctx = gmp::make_primary_context_current(t);
}

}  // namespace

// Outside the anonymous namespace so the names read as written.
extern "C" __attribute__((noinline)) CUdeviceptr alloc_in_main_chain_a(size_t size) {
  CUdeviceptr p = 0;
  CK(t.cuMemAlloc_v2(&p, size));
  asm volatile("" ::: "memory");
  return p;
}

extern "C" __attribute__((noinline)) CUdeviceptr alloc_in_main_chain_b(size_t size) {
  const CUdeviceptr p = alloc_in_main_chain_a(size);
  asm volatile("" ::: "memory");
  return p;
}

extern "C" __attribute__((noinline)) CUdeviceptr alloc_after_unload(size_t size) {
  const CUdeviceptr p = alloc(size);
  asm volatile("" ::: "memory");
  return p;
}

namespace {

std::string plugin_path() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw gmp::CheckFailure("cannot read /proc/self/exe");
  std::string dir(exe, static_cast<size_t>(n));
  return dir.substr(0, dir.rfind('/')) + "/libstack_plugin.so";
}

void chains() {
  alloc_in_main_chain_b(3 * MiB);
  // Loaded only now: the profiler has already written its module map once.
  const std::string path = plugin_path();
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) throw gmp::CheckFailure(std::string("dlopen: ") + dlerror());
  using Entry = CUresult (*)(decltype(t.cuMemAlloc_v2), CUdeviceptr*, size_t);
  auto entry = reinterpret_cast<Entry>(dlsym(plugin, "plugin_alloc_entry"));
  if (entry == nullptr) throw gmp::CheckFailure("plugin_alloc_entry not found");
  CUdeviceptr p = 0;
  CK(entry(t.cuMemAlloc_v2, &p, 5 * MiB));
  dlclose(plugin);
  alloc_after_unload(1 * MiB);
}

void ranges() {
  alloc(1 * MiB);  // the session starts: ranges are recorded from here
  std::binary_semaphore outer_open{0}, worker_allocated{0}, first_done{0};
  std::thread first([&] {
    CK(t.cuCtxSetCurrent(g_ctx));
    gpumemprof_range_push("outer");
    const CUdeviceptr a = alloc(10 * MiB);
    outer_open.release();
    worker_allocated.acquire();
    gpumemprof_range_push("inner");
    alloc(20 * MiB);
    release(a);
    gpumemprof_range_pop();
    gpumemprof_range_pop();
    first_done.release();
  });
  std::thread second([&] {
    CK(t.cuCtxSetCurrent(g_ctx));
    outer_open.acquire();
    gpumemprof_range_push("worker");
    alloc(5 * MiB);
    worker_allocated.release();
    first_done.acquire();
    gpumemprof_range_pop();
  });
  first.join();
  second.join();
}

void marks() {
  alloc(1 * MiB);
  gpumemprof_mark("start");
  const CUdeviceptr x = alloc(100 * MiB);
  gpumemprof_mark("after_a");
  alloc(50 * MiB);
  release(x);
  gpumemprof_mark("after_b");
  release(alloc(300 * MiB));
  alloc(30 * MiB);
  gpumemprof_mark("end");
}

void pause_resume() {
  const CUdeviceptr a = alloc(1 * MiB);
  gpumemprof_pause();
  const CUdeviceptr b = alloc(7 * MiB);
  release(a);
  gpumemprof_resume();
  const CUdeviceptr c = alloc(3 * MiB);
  release(b);
  release(c);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: prog_stacks chains|ranges|marks|pause\n");
    return 2;
  }
  try {
    init();
    const std::string mode = argv[1];
    if (mode == "chains") chains();
    else if (mode == "ranges") ranges();
    else if (mode == "marks") marks();
    else if (mode == "pause") pause_resume();
    else {
      std::fprintf(stderr, "prog_stacks: unknown mode '%s'\n", argv[1]);
      return 2;
    }
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_stacks: %s\n", e.what());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
