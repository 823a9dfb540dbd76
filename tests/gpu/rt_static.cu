// Runtime-API workload: cudaMalloc/cudaMallocPitch/cudaFree with known sizes, one failed
// allocation, and threads racing on reused addresses. Built twice by scripts/gpu_check.py: with
// nvcc's default static cudart (rt_static) and with -cudart shared (rt_shared); the two reach the
// driver differently (docs/design.md §Reaching the driver) and must give identical accounting.
#include <cuda_runtime.h>
#include <libgen.h>
#include <thread>
#include <vector>
#include "truth.h"

int main(int, char** argv) {
  truth::Writer w(basename(argv[0]));
  truth::Device d;
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) w.error("%s: %s", what, cudaGetErrorName(e));
    return e == cudaSuccess;
  };
  if (!check(cudaSetDevice(0), "cudaSetDevice")) return w.finish();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const uint64_t total = prop.totalGlobalMem;  // = cuDeviceTotalMem_v2, what the shim reports
  size_t mi_free = 0, mi_total = 0;
  check(cudaMemGetInfo(&mi_free, &mi_total), "cudaMemGetInfo");
  w.info("cudaMemGetInfo_total", mi_total);

  struct Live { void* p; uint64_t size; };
  auto alloc = [&](uint64_t size) -> Live {
    void* p = nullptr;
    if (!check(cudaMalloc(&p, size), "cudaMalloc")) return {nullptr, 0};
    d.linear.add(size);
    d.update();
    return {p, size};
  };
  auto release = [&](Live& l) {
    if (!l.p) return;
    if (check(cudaFree(l.p), "cudaFree")) { d.linear.sub(l.size); d.update(); }
    l.p = nullptr;
  };

  constexpr uint64_t MiB = 1 << 20;
  Live s1 = alloc(1 * MiB), s2 = alloc(3 * MiB + 5), s3 = alloc(64 * MiB);
  release(s2);

  // A request the device can never satisfy: the app must see the driver's own error, unchanged,
  // and the shim counts one failed allocation on device 0.
  void* big = nullptr;
  cudaError_t e = cudaMalloc(&big, 2 * total);
  if (e == cudaSuccess) { w.error("cudaMalloc(2 x total) succeeded"); cudaFree(big); }
  else d.failed++;
  if (e != cudaErrorMemoryAllocation) w.error("cudaMalloc(2 x total) returned %s", cudaGetErrorName(e));
  if (cudaGetLastError() != cudaErrorMemoryAllocation) w.error("last error not cudaErrorMemoryAllocation");
  if (cudaGetLastError() != cudaSuccess) w.error("error state not cleared by cudaGetLastError");

  // cudaMallocPitch reaches cuMemAllocPitch_v2: the shim's size is pitch x height.
  void* pp = nullptr;
  size_t pitch = 0;
  const size_t height = 300;
  Live pl{nullptr, 0};
  if (check(cudaMallocPitch(&pp, &pitch, 1000, height), "cudaMallocPitch")) {
    pl = {pp, (uint64_t)pitch * height};
    d.linear.add(pl.size);
    d.update();
  }
  w.info("pitch", pitch);
  Live s4 = alloc(257), s5 = alloc(16 * MiB);
  release(s1);
  release(s3);
  release(pl);
  release(s4);

  // Threads racing: the driver hands a freed address to the next caller at once, so a shim that
  // recorded a free after the driver call would show an address live twice (unknown frees or a
  // wrong current). Everything here is freed; the peak is unaffected because 4 x 1 MiB + s5 is
  // far below the earlier peak (asserted below).
  constexpr int kThreads = 4, kPairs = 250;
  std::vector<std::thread> ts;
  std::vector<int> fails(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t, &fails] {
      for (int i = 0; i < kPairs; ++i) {
        void* p = nullptr;
        if (cudaMalloc(&p, size_t(512) << ((i + t) % 12)) != cudaSuccess) { fails[t]++; continue; }
        if (cudaFree(p) != cudaSuccess) fails[t]++;
      }
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < kThreads; ++t)
    if (fails[t]) w.error("thread %d: %d failed calls", t, fails[t]);
  if (d.linear.cur + kThreads * MiB >= d.linear.peak) w.error("thread phase could move the peak");
  d.linear.allocs += kThreads * kPairs;
  d.linear.frees += kThreads * kPairs;

  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // s5 stays allocated: it is what live_at_exit must show.
  w.device_checks(d, total);
  w.kind_checks("linear", d.linear);
  w.exact("live_at_exit.count", 1);
  w.exact("live_at_exit.bytes", s5.size);
  w.exact("host_pinned_bytes.peak", 0);
  return w.finish();
}
