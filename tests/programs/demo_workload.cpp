// gpumemprof-demo: a small, realistic GPU memory workload for trying gpumemprof.
//
//   gpumemprof run -- gpumemprof-demo
//
// Works on a real GPU and on the fake test driver (LD_LIBRARY_PATH=<build>/tests/fake). Reaches
// the driver the way a CUDA runtime does (dlopen libcuda.so.1 + cuGetProcAddress_v2). Everything
// is scaled from the device's memory: at most about a quarter of min(total, free) is used.
//
// Phases (one line each):
//   init             device name and memory, context, stream
//   load weights     4 linear buffers (cuMemAlloc) of 2 units each
//   training steps   5 steps of stream-ordered churn (cuMemAllocAsync/cuMemFreeAsync of 1+2+1
//                    units) and a stream synchronize per step
//   activations      the peak: 4 x 3 units stream-ordered on top of the weights, then released
//   leak             1 unit allocated and deliberately never freed
//   out-of-memory    a deliberate request for 2x the device memory; its failure is reported and
//                    the program carries on
//   done             weights freed; the leaked unit is still live at exit
// where unit = budget / 32 rounded down to whole MiB (minimum 1 MiB), budget = min(total, free)/4.
// Peak use is about 20 units (plus pool rounding), well under the budget.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "check.h"
#include "driver_loader.h"

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;

std::string human(std::uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ULL << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ULL << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / MiB);
  }
  return buf;
}

int run() {
  // Resolved with min(our headers' CUDA version, the driver's), like cudart does.
  gmp::LoadOptions options;
  options.require_fake_hooks = false;
  options.allow_missing = true;  // older drivers lack some entry points the demo does not use
  DriverTable t;
  std::string error;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error, options)) {
    std::fprintf(stderr, "gpumemprof-demo: cannot use the CUDA driver: %s\n", error.c_str());
    return 1;
  }
  if (t.cuDriverGetVersion == nullptr) {
    std::fprintf(stderr, "gpumemprof-demo: cuDriverGetVersion not found\n");
    return 1;
  }
  int driver_version = 0;
  CK(t.cuDriverGetVersion(&driver_version));
  const void* needed[] = {
      reinterpret_cast<const void*>(t.cuInit), reinterpret_cast<const void*>(t.cuDeviceGet),
      reinterpret_cast<const void*>(t.cuDeviceGetName),
      reinterpret_cast<const void*>(t.cuDeviceTotalMem_v2),
      reinterpret_cast<const void*>(t.cuDevicePrimaryCtxRetain),
      reinterpret_cast<const void*>(t.cuCtxSetCurrent),
      reinterpret_cast<const void*>(t.cuMemGetInfo_v2),
      reinterpret_cast<const void*>(t.cuStreamCreate),
      reinterpret_cast<const void*>(t.cuStreamDestroy_v2),
      reinterpret_cast<const void*>(t.cuStreamSynchronize),
      reinterpret_cast<const void*>(t.cuMemAlloc_v2), reinterpret_cast<const void*>(t.cuMemFree_v2),
      reinterpret_cast<const void*>(t.cuMemAllocAsync),
      reinterpret_cast<const void*>(t.cuMemFreeAsync)};
  for (const void* p : needed) {
    if (p == nullptr) {
      std::fprintf(stderr, "gpumemprof-demo: the CUDA driver lacks a required entry point\n");
      return 1;
    }
  }

  CK(t.cuInit(0));
  CUdevice dev = -1;
  CK(t.cuDeviceGet(&dev, 0));
  char name[256] = {};
  CK(t.cuDeviceGetName(name, sizeof name, dev));
  size_t total = 0;
  CK(t.cuDeviceTotalMem_v2(&total, dev));
  CUcontext ctx = nullptr;
  CK(t.cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(t.cuCtxSetCurrent(ctx));
  size_t free_b = 0;
  size_t total_b = 0;
  CK(t.cuMemGetInfo_v2(&free_b, &total_b));
  const std::uint64_t budget = (free_b < total ? free_b : total) / 4;
  std::uint64_t unit = budget / 32 / MiB * MiB;
  if (unit < MiB) unit = MiB;
  CUstream stream = nullptr;
  CK(t.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::printf("[demo] init: %s, %s total, %s free, driver %d; unit %s\n", name,
              human(total).c_str(), human(free_b).c_str(), driver_version, human(unit).c_str());

  // load weights
  std::vector<CUdeviceptr> weights(4, 0);
  for (auto& w : weights) CK(t.cuMemAlloc_v2(&w, 2 * unit));
  std::printf("[demo] load weights: 4 x %s linear (cuMemAlloc)\n", human(2 * unit).c_str());

  // training steps
  constexpr int kSteps = 5;
  for (int step = 0; step < kSteps; ++step) {
    CUdeviceptr grad = 0, act = 0, tmp = 0;
    CK(t.cuMemAllocAsync(&grad, unit, stream));
    CK(t.cuMemAllocAsync(&act, 2 * unit, stream));
    CK(t.cuMemAllocAsync(&tmp, unit, stream));
    CK(t.cuMemFreeAsync(tmp, stream));
    CK(t.cuMemFreeAsync(act, stream));
    CK(t.cuMemFreeAsync(grad, stream));
    CK(t.cuStreamSynchronize(stream));
  }
  std::printf("[demo] training steps: %d steps of stream-ordered alloc/free (%s each), synced\n",
              kSteps, human(4 * unit).c_str());

  // activations (the peak)
  std::vector<CUdeviceptr> acts(4, 0);
  for (auto& a : acts) CK(t.cuMemAllocAsync(&a, 3 * unit, stream));
  CK(t.cuStreamSynchronize(stream));
  std::printf("[demo] activations: peak with %s of activations on top of %s of weights\n",
              human(12 * unit).c_str(), human(8 * unit).c_str());
  for (auto& a : acts) CK(t.cuMemFreeAsync(a, stream));
  CK(t.cuStreamSynchronize(stream));

  // leak
  CUdeviceptr leaked = 0;
  CK(t.cuMemAlloc_v2(&leaked, unit));
  std::printf("[demo] leak: %s at 0x%llx allocated and never freed (on purpose)\n",
              human(unit).c_str(), static_cast<unsigned long long>(leaked));

  // out-of-memory
  CUdeviceptr huge = 0;
  const std::uint64_t request = 2ULL * total;
  const CUresult oom = t.cuMemAlloc_v2(&huge, request);
  if (oom == CUDA_SUCCESS) {
    std::printf("[demo] out-of-memory: request of %s unexpectedly succeeded\n",
                human(request).c_str());
    CK(t.cuMemFree_v2(huge));
    return 1;
  }
  std::printf("[demo] out-of-memory: request of %s failed as intended (%s); carrying on\n",
              human(request).c_str(), gmp::cu_result_name(oom));

  // done
  for (auto& w : weights) CK(t.cuMemFree_v2(w));
  CK(t.cuStreamDestroy_v2(stream));
  std::printf("[demo] done: weights freed; %s still live at exit (the leak)\n",
              human(unit).c_str());
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "gpumemprof-demo: %s\n", e.what());
    return 1;
  }
}
