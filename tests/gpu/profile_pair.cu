// Diagnostic, not a check: where does a cudaMallocAsync+cudaFreeAsync pair spend its time?
// Runs the pair for a few seconds (optionally with extra driver calls interleaved, without the
// shim) and samples the instruction pointer with SIGPROF at ~20 kHz, writing "module offset
// count" lines to argv[2] for symbolization on a build machine (addr2line -f -e MODULE OFFSET).
//   profile_pair MODE OUTFILE    MODE: pair | pair+attr | pair+rdtsc2 | pair+ctxdev | pair+xadd2 |
//                                      pair+slots2 | pair+slots2+xadd2 | pair+slots2nopf |
//                                      pair+ring+drain | pair+ring+drain+write
// The xadd/slots modes imitate the ring's cost (a locked add, a 72-byte slot write in a 72 MB
// ring) without the shim, to tell the ring's own cost from the driver's stalls it exposes.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/time.h>
#include <ucontext.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kMaxSamples = 1 << 20;
uintptr_t g_samples[kMaxSamples];
std::atomic<int> g_count{0};

struct Slot {
  unsigned long long seq;
  unsigned long long payload[8];
};
constexpr size_t kRing = 1 << 20;
Slot* g_ring = nullptr;
std::atomic<unsigned long long> g_head{0};

// A consumer like the collector: every 200 us, copy out what was published; optionally write it
// to a file the way the trace writer does.
std::atomic<bool> g_stop{false};
void drain_loop(FILE* out) {
  std::vector<Slot> buf;
  unsigned long long tail = 0;
  while (!g_stop.load()) {
    for (;;) {
      Slot& s = g_ring[tail & (kRing - 1)];
      if (__atomic_load_n(&s.seq, __ATOMIC_ACQUIRE) != tail + 1) break;
      buf.push_back(s);
      ++tail;
    }
    if (out != nullptr && buf.size() >= 4096) {
      std::fwrite(buf.data(), sizeof(Slot), buf.size(), out);
      std::fflush(out);
    }
    if (buf.size() >= 4096) buf.clear();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void slot_write(bool atomic_claim, bool prefetch) {
  unsigned long long pos = atomic_claim ? g_head.fetch_add(1, std::memory_order_relaxed)
                                        : g_head.load(std::memory_order_relaxed);
  if (!atomic_claim) g_head.store(pos + 1, std::memory_order_relaxed);
  if (prefetch) __builtin_prefetch(&g_ring[(pos + 1) & (kRing - 1)], 1, 3);
  Slot& s = g_ring[pos & (kRing - 1)];
  for (auto& w : s.payload) w = pos;
  __atomic_store_n(&s.seq, pos + 1, __ATOMIC_RELEASE);
}

void on_prof(int, siginfo_t*, void* uc) {
  int i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) g_samples[i] = static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
}

template <typename T>
T entry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
  return reinterpret_cast<T>(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string mode = argv[1];
  g_ring = new Slot[kRing]();
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  auto pool_get_attr = entry<CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>("cuMemPoolGetAttribute");
  auto ctx_get_device = entry<CUresult (*)(CUdevice*)>("cuCtxGetDevice");
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  volatile unsigned long long sink = 0;
  auto one = [&](long i) {
    void* p = nullptr;
    cudaMallocAsync(&p, size_t(256) << (i % 13), s);
    if (mode == "pair+attr") {
      cuuint64_t v;
      pool_get_attr(reinterpret_cast<CUmemoryPool>(pool), CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
    } else if (mode == "pair+rdtsc2") {
      sink = __rdtsc();
      sink = __rdtsc();
    } else if (mode == "pair+xadd2") {
      g_head.fetch_add(1, std::memory_order_relaxed);
      g_head.fetch_add(1, std::memory_order_relaxed);
    } else if (mode == "pair+slots2") {
      slot_write(false, true);
      slot_write(false, true);
    } else if (mode == "pair+slots2+xadd2" || mode == "pair+ring+drain" || mode == "pair+ring+drain+write") {
      slot_write(true, true);
      slot_write(true, true);
    } else if (mode == "pair+slots2nopf") {
      slot_write(false, false);
      slot_write(false, false);
    } else if (mode == "pair+ctxdev") {
      CUdevice d;
      ctx_get_device(&d);
    }
    cudaFreeAsync(p, s);
  };
  std::thread consumer;
  FILE* sink_file = nullptr;
  if (mode == "pair+ring+drain+write") sink_file = std::fopen("/tmp/profile_pair_trace.bin", "wb");
  if (mode.rfind("pair+ring+drain", 0) == 0) consumer = std::thread(drain_loop, sink_file);
  for (long i = 0; i < 200000; ++i) one(i);
  struct sigaction sa {};
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  itimerval it{{0, 50}, {0, 50}};
  setitimer(ITIMER_PROF, &it, nullptr);
  const long n = 3'000'000;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) one(i);
  auto t1 = std::chrono::steady_clock::now();
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  cudaStreamSynchronize(s);
  g_stop = true;
  if (consumer.joinable()) consumer.join();
  if (sink_file) std::fclose(sink_file);
  std::printf("{\"mode\": \"%s\", \"ns_per_pair\": %.2f, \"samples\": %d}\n", mode.c_str(),
              std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n), g_count.load());
  std::map<std::pair<std::string, uintptr_t>, int> hist;
  const int total = std::min(g_count.load(), kMaxSamples);
  for (int i = 0; i < total; ++i) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(g_samples[i]), &info) && info.dli_fname) {
      ++hist[{info.dli_fname, g_samples[i] - reinterpret_cast<uintptr_t>(info.dli_fbase)}];
    } else {
      ++hist[{"?", g_samples[i]}];
    }
  }
  if (FILE* f = std::fopen(argv[2], "w")) {
    for (auto& [k, c] : hist) std::fprintf(f, "%s %lx %d\n", k.first.c_str(), static_cast<unsigned long>(k.second), c);
    std::fclose(f);
  }
  return 0;
}
