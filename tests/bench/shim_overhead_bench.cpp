// Added cost per intercepted call, on the fake driver. The shim is dlopen'ed RTLD_LOCAL next to
// the fake driver, so one process holds both the driver's own functions (the baseline) and the
// shim's wrappers of them (which resolve the same driver), and every ratio comes from one run.
// A second copy of the shim, loaded from another path, is an independent profiler whose session
// starts with GPUMEMPROF_STACKS set: stacks off and on are timed in the same process.
//
// `shim_overhead_bench --rounds R` replaces the Google Benchmark runs with the recording cost per
// event: R interleaved rounds, each timing a block of pairs directly and through each shim copy
// (the order rotating), and the median (min-max) of (shimmed - direct) / 2 per pair. With
// `--driver libcuda.so.1` the same runs on a real GPU: direct and shimmed calls in one process, so
// the large differences between processes of the same program (a bare cudaMallocAsync pair takes
// 750 ns in one process and 1,550 ns in the next on an H200 host) cancel out. `--pairs N` sets the
// block (200,000), `--only async|sync` times one kind of pair. `--shim PATH` times another build of
// the shim, and `--second PATH` makes the second copy another build (with GMP_BENCH_STACKS=0, an
// A/B of two builds in one process). Each round also reports the collectors' CPU per event: what
// the process's other threads ran (/proc/self/task/*/schedstat) over a shimmed block and its drain,
// less the same over the direct block.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/syscall.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <chrono>
#include <thread>
#include <vector>
#include <unistd.h>

#include "interleaved.h"
#include "ring.h"

namespace {

struct Api {
  CUresult (*alloc)(CUdeviceptr*, size_t);
  CUresult (*free)(CUdeviceptr);
  CUresult (*alloc_async)(CUdeviceptr*, size_t, CUstream);
  CUresult (*free_async)(CUdeviceptr, CUstream);
};

void* g_driver = nullptr;
void* g_shim = nullptr;
void* g_shim_stacks = nullptr;
Api g_direct{}, g_shimmed{}, g_shimmed_stacks{};
CUstream g_stream = nullptr;

template <typename T>
T sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (p == nullptr) {
    std::fprintf(stderr, "bench: %s missing: %s\n", name, dlerror());
    std::exit(1);
  }
  return reinterpret_cast<T>(p);
}

Api resolve(void* h) {
  return {sym<decltype(Api::alloc)>(h, "cuMemAlloc_v2"), sym<decltype(Api::free)>(h, "cuMemFree_v2"),
          sym<decltype(Api::alloc_async)>(h, "cuMemAllocAsync"), sym<decltype(Api::free_async)>(h, "cuMemFreeAsync")};
}

std::string g_dir;  // the run directories: gigabytes of trace after a full run
std::string g_driver_path = GMP_FAKE_LIB;
std::string g_shim_path = GMP_SHIM_PATH, g_second_path = GMP_SHIM_PATH;

void setup() {
  char dir[] = "/tmp/gmp-bench-XXXXXX";
  g_dir = mkdtemp(dir);
  setenv("GPUMEMPROF_OUTPUT", (g_dir + "/run.%p").c_str(), 1);
  g_driver = dlopen(g_driver_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  g_shim = dlopen(g_shim_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (g_driver == nullptr || g_shim == nullptr) {
    std::fprintf(stderr, "bench: cannot load driver or shim: %s\n", dlerror());
    std::exit(1);
  }
  sym<CUresult (*)(unsigned)>(g_driver, "cuInit")(0);
  CUcontext ctx;
  sym<CUresult (*)(CUcontext*, CUdevice)>(g_driver, "cuDevicePrimaryCtxRetain")(&ctx, 0);
  sym<CUresult (*)(CUcontext)>(g_driver, "cuCtxSetCurrent")(ctx);
  sym<CUresult (*)(CUstream*, unsigned)>(g_driver, "cuStreamCreate")(&g_stream, 0);
  g_direct = resolve(g_driver);
  g_shimmed = resolve(g_shim);
  CUdeviceptr p;
  setenv("GPUMEMPROF_STACKS", "0", 1);
  g_shimmed.alloc(&p, 256);  // starts this copy's session with stacks off
  g_shimmed.free(p);
  const std::string copy = std::string(dir) + "/libgpumemprof-stacks.so";
  if (std::system(("cp " + g_second_path + " " + copy).c_str()) != 0 ||
      (g_shim_stacks = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL)) == nullptr) {
    std::fprintf(stderr, "bench: cannot load a second copy of the shim: %s\n", dlerror());
    std::exit(1);
  }
  const char* depth = std::getenv("GMP_BENCH_STACKS");
  setenv("GPUMEMPROF_STACKS", depth != nullptr ? depth : "16", 1);
  g_shimmed_stacks = resolve(g_shim_stacks);
  g_shimmed_stacks.alloc(&p, 256);
  g_shimmed_stacks.free(p);
}

void AllocFreePair(benchmark::State& state, const Api* api) {
  for (auto _ : state) {
    CUdeviceptr p;
    api->alloc(&p, 256);
    api->free(p);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

void AsyncPair(benchmark::State& state, const Api* api) {
  for (auto _ : state) {
    CUdeviceptr p;
    api->alloc_async(&p, 256, g_stream);
    api->free_async(p, g_stream);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

// The producer side alone: one push into a ring drained the way the collector drains it
// (everything available, then a 200 us sleep).
void RingPush(benchmark::State& state) {
  gmp::Ring ring(1 << 20);
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    gmp::Event buf[4096];
    while (!stop.load(std::memory_order_relaxed)) {
      while (ring.pop(buf, 4096) == 4096) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  gmp::Event e{};
  for (auto _ : state) ring.push(e);
  stop = true;
  consumer.join();
}

// CPU time (ns) of every thread of this process but the calling one: the two shims' collectors
// (and the benchmark library's idle threads, if any), from /proc's per-task scheduler figures.
double other_threads_cpu_ns() {
  const long self = syscall(SYS_gettid);
  double total = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 0;
  while (dirent* t = readdir(d)) {
    const long tid = std::atol(t->d_name);
    if (tid <= 0 || tid == self) continue;
    FILE* f = std::fopen(("/proc/self/task/" + std::string(t->d_name) + "/schedstat").c_str(), "r");
    unsigned long long on_cpu = 0;
    if (f != nullptr && std::fscanf(f, "%llu", &on_cpu) == 1) total += static_cast<double>(on_cpu);
    if (f != nullptr) std::fclose(f);
  }
  closedir(d);
  return total;
}

struct Block {
  double ns_per_pair;
  double other_cpu_ns;  // what the other threads ran during the block and the drain after it
};

// A block of pairs, then a wait long enough for the collector to drain them (its busy sleep is
// 200 us, its idle one 1 ms), so that the other threads' CPU over the block is the cost of these
// events.
Block timed_block(void (*pair)(const Api&), const Api& api, int pairs) {
  const double cpu0 = other_threads_cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < pairs; ++i) pair(api);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / pairs;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  return {ns, other_threads_cpu_ns() - cpu0};
}

void sync_pair(const Api& api) {
  CUdeviceptr p;
  api.alloc(&p, 256);
  api.free(p);
}

void async_pair(const Api& api) {
  CUdeviceptr p;
  api.alloc_async(&p, 256, g_stream);
  api.free_async(p, g_stream);
}

void interleaved_rounds(int rounds, int block, const std::string& only) {
  const Api* apis[] = {&g_direct, &g_shimmed, &g_shimmed_stacks};
  const struct {
    const char* name;
    void (*pair)(const Api&);
  } pairs[] = {{"cuMemAlloc_v2+cuMemFree_v2", sync_pair}, {"cuMemAllocAsync+cuMemFreeAsync", async_pair}};
  for (const auto& kind : pairs) {
    if (!only.empty() && std::string(kind.name).find(only == "async" ? "Async" : "_v2") == std::string::npos) continue;
    std::vector<double> direct, cost[3], collector[3];
    for (int r = 0; r < rounds; ++r) {
      Block b[3];
      for (int k = 0; k < 3; ++k) {
        const int v = (r + k) % 3;
        b[v] = timed_block(kind.pair, *apis[v], block);
      }
      direct.push_back(b[0].ns_per_pair);
      // The collectors' CPU per event: what the other threads ran in a shimmed block less what
      // they ran (idle wake-ups) in the direct one, over the block's 2 events per pair.
      for (int v = 1; v < 3; ++v) {
        cost[v].push_back((b[v].ns_per_pair - b[0].ns_per_pair) / 2);
        collector[v].push_back((b[v].other_cpu_ns - b[0].other_cpu_ns) / (2.0 * block));
      }
    }
    const auto d = gmp::bench::spread(direct), off = gmp::bench::spread(cost[1]), on = gmp::bench::spread(cost[2]);
    const auto coff = gmp::bench::spread(collector[1]), con = gmp::bench::spread(collector[2]);
    std::printf("%s, %d rounds of %d pairs: direct %.1f ns/pair (%.1f-%.1f); recording per event: stacks off "
                "%.1f ns (%.1f-%.1f), stacks on %.1f ns (%.1f-%.1f); pair ratio: stacks off %.3f, on %.3f; "
                "collector CPU per event: stacks off %.1f ns (%.1f-%.1f), stacks on %.1f ns (%.1f-%.1f)\n",
                kind.name, rounds, block, d.median, d.min, d.max, off.median, off.min, off.max, on.median, on.min,
                on.max, (d.median + 2 * off.median) / d.median, (d.median + 2 * on.median) / d.median, coff.median,
                coff.min, coff.max, con.median, con.min, con.max);
  }
}

}  // namespace

BENCHMARK_CAPTURE(AllocFreePair, direct, &g_direct);
BENCHMARK_CAPTURE(AllocFreePair, shim, &g_shimmed);
BENCHMARK_CAPTURE(AllocFreePair, shim_stacks, &g_shimmed_stacks);
BENCHMARK_CAPTURE(AsyncPair, direct, &g_direct);
BENCHMARK_CAPTURE(AsyncPair, shim, &g_shimmed);
BENCHMARK_CAPTURE(AsyncPair, shim_stacks, &g_shimmed_stacks);
BENCHMARK(RingPush);

int main(int argc, char** argv) {
  // Each copy of the shim takes about 1 KiB of static TLS (initial-exec: it is normally
  // preloaded); dlopen'ing two needs more than glibc's default 512-byte surplus.
  if (std::getenv("GLIBC_TUNABLES") == nullptr) {
    setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=16384", 1);
    execv("/proc/self/exe", argv);
  }
  int rounds = 0, block = 200'000;
  std::string only;
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--rounds") rounds = std::atoi(argv[++i]);
    else if (flag == "--pairs") block = std::atoi(argv[++i]);
    else if (flag == "--driver") g_driver_path = argv[++i];
    else if (flag == "--only") only = argv[++i];
    else if (flag == "--shim") g_shim_path = argv[++i];
    else if (flag == "--second") g_second_path = argv[++i];
  }
  setup();
  if (rounds > 0 && block > 0) {
    interleaved_rounds(rounds, block, only);
  } else {
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  // The traces are of no use once timed: remove them, then leave without the shims' exit flush,
  // which would only fail to write summaries into the removed directory.
  std::fflush(nullptr);
  if (std::system(("rm -rf '" + g_dir + "'").c_str()) != 0) std::fprintf(stderr, "bench: could not remove %s\n", g_dir.c_str());
  std::_Exit(0);
}
