// prog_stress THREADS ITERS
//
// THREADS threads each run ITERS iterations of cuMemAlloc_v2 + cuMemFree_v2 (sizes cycling over
// 256 B, 4 KiB, 64 KiB, 1 MiB, the same sequence in every thread) and, on every 4th iteration
// (i % 4 == 3), one cuMemAllocAsync + cuMemFreeAsync pair on the per-thread default stream
// (through the `_ptsz` pointers). The fake driver hands a freed address to the next request of the
// same size from any thread at once, and each thread yields right after every free, so the next
// thread's allocation usually receives the address just freed by another thread (measured: >90%
// of allocations with 8 threads on 2 cores).
// Driver resolved cudart-style. Prints one JSON line with the exact counts a profiler must report:
//   {"threads":T,"iters":I,"linear_allocs":T*I,"pool_allocs":T*(I/4),
//    "alloc_count":T*(I+I/4),"free_count":T*(I+I/4),"alloc_free_events":2*T*(I+I/4),
//    "failed_alloc_count":0,"unknown_frees":0,"live_at_exit":0}
// Ends with cuCtxSynchronize_v2 (the CUDA 13 ABI), so the default pool holds nothing at exit.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "driver_loader.h"

namespace {

constexpr size_t kSizes[] = {256, 4096, 65536, 1 << 20};

void worker(const DriverTable& t, CUcontext ctx, int index, long iters,
            std::atomic<bool>& failed) {
  try {
    CK(t.cuCtxSetCurrent(ctx));
    for (long i = 0; i < iters && !failed.load(std::memory_order_relaxed); ++i) {
      const size_t size = kSizes[static_cast<size_t>(i) % 4];
      CUdeviceptr p = 0;
      CK(t.cuMemAlloc_v2(&p, size));
      CK(t.cuMemFree_v2(p));
      std::this_thread::yield();  // let another thread take the address just freed
      if (i % 4 == 3) {
        CUdeviceptr q = 0;
        CK(t.cuMemAllocAsync(&q, size, CU_STREAM_PER_THREAD));
        CK(t.cuMemFreeAsync(q, CU_STREAM_PER_THREAD));
        std::this_thread::yield();
      }
    }
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_stress: thread %d: %s\n", index, e.what());
    failed = true;
  }
}

long parse_positive(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (end == s || *end != '\0' || v <= 0) ? -1 : v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: prog_stress THREADS ITERS\n");
    return 2;
  }
  const long threads = parse_positive(argv[1]);
  const long iters = parse_positive(argv[2]);
  if (threads < 1 || threads > 1024 || iters < 1) {
    std::fprintf(stderr, "prog_stress: THREADS must be 1..1024 and ITERS >= 1\n");
    return 2;
  }
  DriverTable t;
  std::string error;
  gmp::LoadOptions options;
  options.require_fake_hooks = false;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error, options)) {
    std::fprintf(stderr, "prog_stress: %s\n", error.c_str());
    return 1;
  }
  std::atomic<bool> failed{false};
  CUcontext ctx = nullptr;
  try {
    ctx = gmp::make_primary_context_current(t);
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_stress: %s\n", e.what());
    return 1;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (long i = 0; i < threads; ++i) {
    pool.emplace_back(worker, std::cref(t), ctx, static_cast<int>(i), iters, std::ref(failed));
  }
  for (auto& th : pool) th.join();
  if (failed) return 1;
  try {
    CK(t.cuCtxSynchronize_v2(ctx));
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_stress: %s\n", e.what());
    return 1;
  }
  const long long linear = static_cast<long long>(threads) * iters;
  const long long pooled = static_cast<long long>(threads) * (iters / 4);
  const long long allocs = linear + pooled;
  std::printf(
      "{\"threads\":%ld,\"iters\":%ld,\"linear_allocs\":%lld,\"pool_allocs\":%lld,"
      "\"alloc_count\":%lld,\"free_count\":%lld,\"alloc_free_events\":%lld,"
      "\"failed_alloc_count\":0,\"unknown_frees\":0,\"live_at_exit\":0}\n",
      threads, iters, linear, pooled, allocs, allocs, 2 * allocs);
  return 0;
}
