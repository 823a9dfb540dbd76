// What each ingredient of the shim's hot path costs on this machine's real driver: time sources,
// and the driver queries a wrapper could make per call, plus one cudaMallocAsync + cudaFreeAsync
// pair. Prints one JSON object (ns per call). scripts/gpu_check.py runs it once without and once
// with the shim (LD_PRELOAD) and reports every key as an INFO row: the driver queries should cost
// about the same both ways (the shim does not wrap them), the pair shows the shim's cost.
#include <cuda.h>
#include <cuda_runtime.h>
#include <x86intrin.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace {

template <typename F>
double ns_per_call(F&& f, long n = 2'000'000) {
  for (long i = 0; i < n / 10; ++i) f();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n);
}

template <typename T>
T entry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
  return reinterpret_cast<T>(p);
}

}  // namespace

int main() {
  if (cudaError_t e = cudaSetDevice(0); e != cudaSuccess) {
    std::fprintf(stderr, "hotpath_costs: cudaSetDevice: %s\n", cudaGetErrorName(e));
    return 1;
  }
  cudaStream_t s;
  if (cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess) {
    std::fprintf(stderr, "hotpath_costs: cudaStreamCreate: %s\n", cudaGetErrorName(e));
    return 1;
  }
  auto ctx_get_device = entry<CUresult (*)(CUdevice*)>("cuCtxGetDevice");
  auto stream_get_device = entry<CUresult (*)(CUstream, CUdevice*)>("cuStreamGetDevice");
  auto stream_get_ctx = entry<CUresult (*)(CUstream, CUcontext*)>("cuStreamGetCtx");
  auto device_get_mem_pool = entry<CUresult (*)(CUmemoryPool*, CUdevice)>("cuDeviceGetMemPool");
  auto pool_get_attr = entry<CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>("cuMemPoolGetAttribute");
  auto ctx_get_current = entry<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  // cuStreamGetDevice is new (CUDA 12.8); the others must be there.
  if (!ctx_get_device || !stream_get_ctx || !device_get_mem_pool || !pool_get_attr || !ctx_get_current) {
    std::fprintf(stderr, "hotpath_costs: a driver entry point could not be resolved\n");
    return 1;
  }
  CUmemoryPool pool;
  device_get_mem_pool(&pool, 0);
  volatile unsigned long long sink = 0;
  CUdevice d;
  CUcontext c;
  cuuint64_t v;
  timespec ts;
  std::printf("{\"clock_gettime_monotonic\": %.2f", ns_per_call([&] { clock_gettime(CLOCK_MONOTONIC, &ts); sink = ts.tv_nsec; }));
  std::printf(", \"rdtsc\": %.2f", ns_per_call([&] { sink = __rdtsc(); }));
  std::printf(", \"cuCtxGetCurrent\": %.2f", ns_per_call([&] { ctx_get_current(&c); }));
  std::printf(", \"cuCtxGetDevice\": %.2f", ns_per_call([&] { ctx_get_device(&d); }));
  std::printf(", \"cuStreamGetDevice\": %.2f", stream_get_device ? ns_per_call([&] { stream_get_device(s, &d); }) : -1.0);
  std::printf(", \"cuStreamGetCtx\": %.2f", ns_per_call([&] { stream_get_ctx(s, &c); }));
  std::printf(", \"cuDeviceGetMemPool\": %.2f", ns_per_call([&] { device_get_mem_pool(&pool, 0); }));
  std::printf(", \"cuMemPoolGetAttribute_reserved\": %.2f",
              ns_per_call([&] { pool_get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v); }));
  void* p = nullptr;
  std::printf(", \"cudaMallocAsync_cudaFreeAsync_pair\": %.2f}\n", ns_per_call([&] {
                cudaMallocAsync(&p, 4096, s);
                cudaFreeAsync(p, s);
              }, 500'000));
  cudaStreamSynchronize(s);
  return 0;
}
