// prog_limit OP [OP...] — every kind of device memory and every memory query, for the device-limit
// tests (docs/device-limit.md). The driver is resolved cudart-style; after cuInit device 0's
// primary context is current. Each op prints one line: the op as given, then the CUresult number
// of its call (0 success, 2 out of memory), or the figures a query returned, in bytes.
//
//   device:N        device N's primary context made current
//   alloc:SIZE      cuMemAlloc_v2                    free         cuMemFree_v2 of the last one
//   pitch:H         cuMemAllocPitch_v2(1024 x H, element 4; pitch 1024), freed by `free`
//   array:H         cuArrayCreate_v2 1024 x H, 8-bit, 1 channel   array_free   the last array
//   async:SIZE      cuMemAllocAsync on the legacy stream          async_free   the last one
//   pool:SIZE       cuMemAllocFromPoolAsync from a pool of the current device made by the first
//   sync            cuCtxSynchronize_v2 (pools give back what the release threshold allows)
//   vmm:SIZE        cuMemCreate on the current device  vmm_map:SIZE  maps the last handle's first SIZE
//   vmm_release     cuMemRelease of the last handle    vmm_unmap  unmaps the last mapping
//   race:T:SIZE     T threads, each on a stream of its own, allocate SIZE with cuMemAllocAsync until
//                   refused (at most 64 each); prints the allocations that succeeded and the default
//                   pool's RESERVED_MEM_HIGH; everything is freed and synchronized after
//   managed:SIZE    cuMemAllocManaged
//   meminfo meminfo_v1 totalmem totalmem_v1   cuMemGetInfo_v2, the 32-bit cuMemGetInfo (dlsym),
//                   cuDeviceTotalMem_v2 and the 32-bit cuDeviceTotalMem of the current device
//   nvml nvml_v2    nvmlDeviceGetMemoryInfo(_v2) of the current device (dlopen + dlsym)
// SIZE: bytes, optionally followed by K or M (1024-based). Exit status 2 for an unknown op.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "driver_loader.h"

namespace {


unsigned long long size_of(const std::string& s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end == 'K') v <<= 10;
  if (*end == 'M') v <<= 20;
  return v;
}

struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlMemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};

void* nvml_device(int device) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
  auto by_pci = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  char pci[32];
  std::snprintf(pci, sizeof pci, "0000:%02X:00.0", device + 1);  // the fake driver's bus ids
  void* handle = nullptr;
  if (init == nullptr || by_pci == nullptr || init() != 0 || by_pci(pci, &handle) != 0) return nullptr;
  return handle;
}

}  // namespace

int main(int argc, char** argv) {
  DriverTable t;
  std::string error;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error)) {
    std::fprintf(stderr, "prog_limit: %s\n", error.c_str());
    return 1;
  }
  gmp::make_primary_context_current(t);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int device = 0;
  std::vector<CUdeviceptr> linear, async;
  std::vector<CUarray> arrays;
  std::vector<CUmemGenericAllocationHandle> handles;
  std::vector<std::pair<CUdeviceptr, size_t>> maps;
  CUmemoryPool pool = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    const size_t colon = token.find(':');
    const std::string op = token.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : token.substr(colon + 1);
    CUresult r = CUDA_SUCCESS;
    std::string figures;
    if (op == "device") {
      device = std::atoi(arg.c_str());
      CUcontext ctx = nullptr;
      r = t.cuDevicePrimaryCtxRetain(&ctx, device);
      if (r == CUDA_SUCCESS) r = t.cuCtxSetCurrent(ctx);
    } else if (op == "context") {  // the fake NVML's context grows, as lazily loaded modules make it
      setenv("FAKE_NVML_CONTEXT", std::to_string(size_of(arg)).c_str(), 1);
    } else if (op == "alloc") {
      CUdeviceptr p = 0;
      if ((r = t.cuMemAlloc_v2(&p, size_of(arg))) == CUDA_SUCCESS) linear.push_back(p);
    } else if (op == "pitch") {
      CUdeviceptr p = 0;
      size_t pitch = 0;
      if ((r = t.cuMemAllocPitch_v2(&p, &pitch, 1024, size_of(arg), 4)) == CUDA_SUCCESS) linear.push_back(p);
    } else if (op == "free") {
      r = t.cuMemFree_v2(linear.back());
      linear.pop_back();
    } else if (op == "array") {
      CUDA_ARRAY_DESCRIPTOR d{1024, size_of(arg), CU_AD_FORMAT_UNSIGNED_INT8, 1};
      CUarray a = nullptr;
      if ((r = t.cuArrayCreate_v2(&a, &d)) == CUDA_SUCCESS) arrays.push_back(a);
    } else if (op == "array_free") {
      r = t.cuArrayDestroy(arrays.back());
      arrays.pop_back();
    } else if (op == "async" || op == "pool") {
      CUdeviceptr p = 0;
      if (op == "pool" && pool == nullptr) {
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
        CK(t.cuMemPoolCreate(&pool, &props));
      }
      r = op == "async" ? t.cuMemAllocAsync(&p, size_of(arg), CU_STREAM_LEGACY)
                        : t.cuMemAllocFromPoolAsync(&p, size_of(arg), pool, CU_STREAM_LEGACY);
      if (r == CUDA_SUCCESS) async.push_back(p);
    } else if (op == "async_free") {
      r = t.cuMemFreeAsync(async.back(), CU_STREAM_LEGACY);
      async.pop_back();
    } else if (op == "sync") {
      r = t.cuCtxSynchronize_v2(nullptr);
    } else if (op == "vmm") {
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
      CUmemGenericAllocationHandle h = 0;
      if ((r = t.cuMemCreate(&h, size_of(arg), &prop, 0)) == CUDA_SUCCESS) handles.push_back(h);
    } else if (op == "vmm_map") {
      CUdeviceptr va = 0;
      CK(t.cuMemAddressReserve(&va, size_of(arg), 0, 0, 0));
      if ((r = t.cuMemMap(va, size_of(arg), 0, handles.back(), 0)) == CUDA_SUCCESS) maps.push_back({va, size_of(arg)});
    } else if (op == "vmm_release") {
      r = t.cuMemRelease(handles.back());
      handles.pop_back();
    } else if (op == "vmm_unmap") {
      r = t.cuMemUnmap(maps.back().first, maps.back().second);
      maps.pop_back();
    } else if (op == "race") {
      const size_t colon2 = arg.find(':');
      const int threads = std::atoi(arg.substr(0, colon2).c_str());
      const uint64_t size = size_of(arg.substr(colon2 + 1));
      std::atomic<int> go{0};
      std::atomic<int> done{0};
      std::vector<std::vector<CUdeviceptr>> got(threads);
      std::vector<CUstream> streams(threads);
      std::vector<std::thread> workers;
      CUcontext ctx = nullptr;
      CK(t.cuCtxGetCurrent(&ctx));
      for (int w = 0; w < threads; ++w) {
        workers.emplace_back([&, w] {
          CK(t.cuCtxSetCurrent(ctx));
          CK(t.cuStreamCreate(&streams[w], CU_STREAM_NON_BLOCKING));
          ++done;
          while (go.load() == 0) std::this_thread::yield();
          for (int i = 0; i < 64; ++i) {
            CUdeviceptr p = 0;
            if (t.cuMemAllocAsync(&p, size, streams[w]) != CUDA_SUCCESS) break;
            got[w].push_back(p);
          }
        });
      }
      while (done.load() < threads) std::this_thread::yield();  // every stream made, then all at once
      go.store(1);
      for (auto& w : workers) w.join();
      cuuint64_t high = 0;
      CUmemoryPool pool = nullptr;
      CK(t.cuDeviceGetMemPool(&pool, device));
      CK(t.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &high));
      size_t successes = 0;
      for (int w = 0; w < threads; ++w) {
        successes += got[w].size();
        for (CUdeviceptr p : got[w]) CK(t.cuMemFreeAsync(p, streams[w]));
        CK(t.cuStreamSynchronize(streams[w]));
      }
      figures = " allocated " + std::to_string(successes) + " pool_high " + std::to_string(high);
    } else if (op == "managed") {
      CUdeviceptr p = 0;
      r = t.cuMemAllocManaged(&p, size_of(arg), CU_MEM_ATTACH_GLOBAL);
    } else if (op == "meminfo" || op == "meminfo_v1") {
      unsigned long long f = 0, tot = 0;
      if (op == "meminfo") {
        size_t a = 0, b = 0;
        r = t.cuMemGetInfo_v2(&a, &b);
        f = a, tot = b;
      } else {
        auto v1 = reinterpret_cast<CUresult (*)(unsigned*, unsigned*)>(dlsym(cuda, "cuMemGetInfo"));
        unsigned a = 0, b = 0;
        r = v1(&a, &b);
        f = a, tot = b;
      }
      figures = " free " + std::to_string(f) + " total " + std::to_string(tot);
    } else if (op == "totalmem" || op == "totalmem_v1") {
      unsigned long long bytes = 0;
      if (op == "totalmem") {
        size_t b = 0;
        r = t.cuDeviceTotalMem_v2(&b, device);
        bytes = b;
      } else {
        auto v1 = reinterpret_cast<CUresult (*)(unsigned*, CUdevice)>(dlsym(cuda, "cuDeviceTotalMem"));
        unsigned b = 0;
        r = v1(&b, device);
        bytes = b;
      }
      figures = " total " + std::to_string(bytes);
    } else if (op == "nvml" || op == "nvml_v2") {
      void* h = nvml_device(device);
      void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (op == "nvml") {
        NvmlMemory m{};
        auto get = reinterpret_cast<int (*)(void*, NvmlMemory*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
        r = static_cast<CUresult>(get(h, &m));
        figures = " total " + std::to_string(m.total) + " free " + std::to_string(m.free) + " used " +
                  std::to_string(m.used);
      } else {
        NvmlMemoryV2 m{};
        auto get = reinterpret_cast<int (*)(void*, NvmlMemoryV2*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo_v2"));
        r = static_cast<CUresult>(get(h, &m));
        figures = " total " + std::to_string(m.total) + " reserved " + std::to_string(m.reserved) + " free " +
                  std::to_string(m.free) + " used " + std::to_string(m.used);
      }
    } else {
      std::fprintf(stderr, "prog_limit: unknown op '%s'\n", token.c_str());
      return 2;
    }
    std::printf("%s %d%s\n", token.c_str(), static_cast<int>(r), figures.c_str());
    std::fflush(stdout);
  }
  return 0;
}
