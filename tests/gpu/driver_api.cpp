// Driver-API workload linked with -lcuda: the PLT path to the exported versioned names
// (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2, cuArrayCreate_v2, cuMemAllocManaged,
// cuMemHostAlloc, cuMemAllocHost_v2, cuMemFreeHost). Sizes are chosen here, so the numbers the
// shim must report are known exactly.
#include <cuda.h>
#include "truth.h"

int main() {
  truth::Writer w("driver_api");
  truth::Device d;
  auto check = [&](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) {
      const char* n = "?";
      cuGetErrorName(r, &n);
      w.error("%s: %s", what, n);
    }
    return r == CUDA_SUCCESS;
  };
  CUdevice dev;
  CUcontext ctx;
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
    return w.finish();
  size_t total = 0;
  check(cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  constexpr uint64_t MiB = 1 << 20;

  // Arrays first, alone: their byte size is the one figure not fixed by the request (the shim
  // takes it from the descriptor, cuArrayGetMemoryRequirements only answers for deferred-mapping
  // arrays), so keep it out of the device peaks, which the linear phase below sets.
  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 512;
  ad.Height = 512;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 1;
  const uint64_t array_bytes = 512 * 512 * 4;
  CUarray arr;
  if (check(cuArrayCreate(&arr, &ad), "cuArrayCreate")) {
    d.array.add(array_bytes);
    d.update();
    if (check(cuArrayDestroy(arr), "cuArrayDestroy")) { d.array.sub(array_bytes); d.update(); }
  }

  // Managed memory: its own bucket, not in the device totals. One stays live.
  CUdeviceptr m1 = 0, m2 = 0;
  if (check(cuMemAllocManaged(&m1, 4 * MiB, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged")) d.managed.add(4 * MiB);
  if (check(cuMemAllocManaged(&m2, 1 * MiB, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged")) d.managed.add(1 * MiB);
  if (m1 && check(cuMemFree(m1), "cuMemFree(managed)")) d.managed.sub(4 * MiB);

  // Pinned host memory: process-wide bucket, not device memory, not in alloc_count.
  void *h1 = nullptr, *h2 = nullptr;
  uint64_t pin_cur = 0, pin_peak = 0;
  if (check(cuMemHostAlloc(&h1, 2 * MiB, 0), "cuMemHostAlloc")) pin_cur += 2 * MiB;
  if (check(cuMemAllocHost(&h2, 1 * MiB), "cuMemAllocHost")) pin_cur += 1 * MiB;
  pin_peak = pin_cur;
  if (h1 && check(cuMemFreeHost(h1), "cuMemFreeHost")) pin_cur -= 2 * MiB;

  // Linear allocations.
  struct Live { CUdeviceptr p; uint64_t size; };
  auto alloc = [&](uint64_t size) -> Live {
    CUdeviceptr p = 0;
    if (!check(cuMemAlloc(&p, size), "cuMemAlloc")) return {0, 0};
    d.linear.add(size);
    d.update();
    return {p, size};
  };
  auto release = [&](Live& l) {
    if (l.p && check(cuMemFree(l.p), "cuMemFree")) { d.linear.sub(l.size); d.update(); }
    l.p = 0;
  };
  Live a = alloc(8 * MiB), b = alloc(32 * MiB + 3);
  size_t pitch = 0;
  Live pl{0, 0};
  if (check(cuMemAllocPitch(&pl.p, &pitch, 3000, 100, 4), "cuMemAllocPitch")) {
    pl.size = (uint64_t)pitch * 100;  // docs/accounting.md: size = pitch x height
    d.linear.add(pl.size);
    d.update();
  }
  w.info("pitch", pitch);
  release(a);
  CUdeviceptr big = 0;
  CUresult r = cuMemAlloc(&big, 2 * total);
  if (r == CUDA_SUCCESS) { w.error("cuMemAlloc(2 x total) succeeded"); cuMemFree(big); }
  else d.failed++;
  if (r != CUDA_ERROR_OUT_OF_MEMORY) w.error("cuMemAlloc(2 x total) returned %d", (int)r);
  Live c = alloc(512);
  release(b);
  release(pl);
  check(cuCtxSynchronize(), "cuCtxSynchronize");

  // c (512 B linear) and m2 (1 MiB managed) stay live; h2 (1 MiB pinned) too.
  w.device_checks(d, total);
  w.kind_checks("linear", d.linear);
  w.kind_checks("managed", d.managed);
  w.range("dev0.by_kind.array.peak", array_bytes, array_bytes, 2 * array_bytes + 2 * MiB,
          "array size from the descriptor (512x512 float); the driver may pad");
  w.exact("dev0.by_kind.array.current", 0);
  w.exact("dev0.by_kind.array.allocs", 1);
  w.exact("dev0.by_kind.array.frees", 1);
  w.exact("host_pinned_bytes.peak", pin_peak);
  w.exact("host_pinned_bytes.current", pin_cur);
  w.exact("live_at_exit.count", 2);
  w.exact("live_at_exit.bytes", c.size + 1 * MiB);
  return w.finish();
}
