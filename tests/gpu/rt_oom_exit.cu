// Out-of-memory workload, static cudart (nvcc's default): keeps one 256 MiB cudaMalloc, asks for
// twice the device's memory (fails with cudaErrorMemoryAllocation), writes its ground truth and
// calls exit(3) at once: no cudaFree, no error handling, no cudaDeviceReset, as a program that
// gives up on the error does.
//
// Expected from the shim (compare.py checks the "oom" object of the ground truth): one OOM bundle
// in <run dir>/oom/ whose metadata.json request is {api cuMemAlloc_v2, size 2 x total, error 2},
// failures 1, recovered false; allocations.json lists the 256 MiB allocation; summary.json has
// oom {bundles_written 1, failures 1, recovered 0}, 256 MiB live at exit; the exit status stays 3.
#include <cuda_runtime.h>
#include <libgen.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include "truth.h"

int main(int, char** argv) {
  constexpr uint64_t MiB = 1 << 20;
  constexpr uint64_t kLive = 256 * MiB;
  constexpr int kExit = 3;
  truth::Writer w(basename(argv[0]));
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) w.error("%s: %s", what, cudaGetErrorName(e));
    return e == cudaSuccess;
  };
  cudaDeviceProp prop{};
  if (!check(cudaSetDevice(0), "cudaSetDevice") ||
      !check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"))
    return w.finish();
  const uint64_t total = prop.totalGlobalMem;  // = cuDeviceTotalMem_v2
  const uint64_t request = 2 * total;

  void* keep = nullptr;
  if (!check(cudaMalloc(&keep, kLive), "cudaMalloc(256 MiB)")) return w.finish();

  void* big = nullptr;
  const cudaError_t e = cudaMalloc(&big, request);
  if (e == cudaSuccess) w.error("cudaMalloc(2 x total) succeeded");
  else if (e != cudaErrorMemoryAllocation) w.error("cudaMalloc(2 x total) returned %s", cudaGetErrorName(e));

  w.info("total", total);
  w.info("request", request);
  w.info("live_bytes", kLive);
  w.exact("dev0.total_bytes", total);
  w.exact("dev0.failed_alloc_count", 1);
  w.exact("dev0.by_kind.linear.allocs", 1);
  w.exact("dev0.by_kind.linear.current", kLive);
  w.exact("live_at_exit.count", 1);
  w.exact("live_at_exit.bytes", kLive);
  w.exact("oom.bundles_written", 1);
  w.exact("oom.failures", 1);
  w.exact("oom.recovered", 0);
  const std::string r = std::to_string(request);
  w.top("expect_exit", std::to_string(kExit));
  w.top("oom", "{\"bundles\": 1, \"api\": \"cuMemAlloc_v2\", \"device\": 0, \"error\": 2, "
               "\"request_size\": " + r + ", \"request_size_max\": " + r + ", "
               "\"live_bytes\": " + std::to_string(kLive) + ", \"live_exact\": true, "
               "\"failures\": 1, \"recovered\": false}");
  // Ground truth first (the process ends here), then exit without cleanup.
  std::exit(w.finish() == 0 ? kExit : 1);
}
