// What one call of the live query API costs (include/gpumemprof.h, docs/python.md): the shim is
// dlopen'ed beside the fake driver, a session is started by one allocation through it, and each
// exported function is timed as a program calls it. "_under_load" runs another thread allocating
// and freeing through the shim meanwhile, so the collector republishes while the reader reads.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#define GPUMEMPROF_TYPES_ONLY
#include "../../include/gpumemprof.h"

namespace {

void* g_shim = nullptr;
CUresult (*g_alloc)(CUdeviceptr*, size_t);
CUresult (*g_free)(CUdeviceptr);
int (*g_device_stats)(int, gpumemprof_device_stats_t*, size_t);
int (*g_counts)(gpumemprof_counts_t*, size_t);
void (*g_reset)();
int (*g_sync)(uint64_t);
size_t (*g_recent)(uint64_t, gpumemprof_record_t*, size_t);

template <typename T>
void sym(void* h, const char* name, T& out) {
  out = reinterpret_cast<T>(dlsym(h, name));
  if (out == nullptr) {
    std::fprintf(stderr, "bench: %s missing\n", name);
    std::exit(1);
  }
}

void setup() {
  char dir[] = "/tmp/gmp-query-bench-XXXXXX";
  setenv("GPUMEMPROF_OUTPUT", (std::string(mkdtemp(dir)) + "/run").c_str(), 1);
  void* driver = dlopen(GMP_FAKE_LIB, RTLD_NOW | RTLD_GLOBAL);
  g_shim = dlopen(GMP_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr || g_shim == nullptr) {
    std::fprintf(stderr, "bench: %s\n", dlerror());
    std::exit(1);
  }
  CUresult (*init)(unsigned);
  CUresult (*get)(CUdevice*, int);
  CUresult (*retain)(CUcontext*, CUdevice);
  CUresult (*set)(CUcontext);
  sym(driver, "cuInit", init);
  sym(driver, "cuDeviceGet", get);
  sym(driver, "cuDevicePrimaryCtxRetain", retain);
  sym(driver, "cuCtxSetCurrent", set);
  CUdevice dev;
  CUcontext ctx;
  init(0);
  get(&dev, 0);
  retain(&ctx, dev);
  set(ctx);
  sym(g_shim, "cuMemAlloc_v2", g_alloc);
  sym(g_shim, "cuMemFree_v2", g_free);
  sym(g_shim, "gpumemprof_device_stats", g_device_stats);
  sym(g_shim, "gpumemprof_counts", g_counts);
  sym(g_shim, "gpumemprof_reset_peaks", g_reset);
  sym(g_shim, "gpumemprof_sync", g_sync);
  sym(g_shim, "gpumemprof_recent", g_recent);
  CUdeviceptr p;
  g_alloc(&p, 1 << 20);  // starts the session
  for (int i = 0; i < 100; ++i) {
    CUdeviceptr q;
    g_alloc(&q, 4096);
    g_free(q);
  }
  g_sync(1000);
}

// Another thread allocating and freeing through the shim for the duration of a benchmark.
class Load {
 public:
  Load()
      : t_([this] {
          while (!stop_.load(std::memory_order_relaxed)) {
            CUdeviceptr q;
            g_alloc(&q, 4096);
            g_free(q);
          }
        }) {}
  ~Load() {
    stop_ = true;
    t_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread t_;
};

void BM_device_stats(benchmark::State& state) {
  gpumemprof_device_stats_t s;
  for (auto _ : state) benchmark::DoNotOptimize(g_device_stats(0, &s, sizeof s));
}
BENCHMARK(BM_device_stats);

void BM_device_stats_under_load(benchmark::State& state) {
  Load load;
  gpumemprof_device_stats_t s;
  for (auto _ : state) benchmark::DoNotOptimize(g_device_stats(0, &s, sizeof s));
}
BENCHMARK(BM_device_stats_under_load)->UseRealTime();

void BM_counts(benchmark::State& state) {
  gpumemprof_counts_t c;
  for (auto _ : state) benchmark::DoNotOptimize(g_counts(&c, sizeof c));
}
BENCHMARK(BM_counts);

void BM_reset_peaks(benchmark::State& state) {
  for (auto _ : state) g_reset();
}
BENCHMARK(BM_reset_peaks);

// Nothing new since the last read: what a tracker's idle poll costs.
void BM_recent_nothing_new(benchmark::State& state) {
  gpumemprof_counts_t c;
  g_counts(&c, sizeof c);
  gpumemprof_record_t r[64];
  for (auto _ : state) benchmark::DoNotOptimize(g_recent(c.records, r, 64));
}
BENCHMARK(BM_recent_nothing_new);

void BM_recent_64_records(benchmark::State& state) {
  gpumemprof_counts_t c;
  g_counts(&c, sizeof c);
  gpumemprof_record_t r[64];
  for (auto _ : state) benchmark::DoNotOptimize(g_recent(c.records - 64, r, 64));
}
BENCHMARK(BM_recent_64_records);

// Nothing recorded since the last sync: the figures are already current.
void BM_sync_idle(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(g_sync(1000));
}
BENCHMARK(BM_sync_idle)->UseRealTime();

// A window opened and waited for, as profile_function does: a round trip to the collector (woken,
// one pass, published).
void BM_reset_and_sync(benchmark::State& state) {
  for (auto _ : state) {
    g_reset();
    benchmark::DoNotOptimize(g_sync(1000));
  }
}
BENCHMARK(BM_reset_and_sync)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setup();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
