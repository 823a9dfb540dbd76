// probe_proc_address [BASE_NAME...]: prints, for each base name, what the libcuda.so.1 in the
// library path hands out through cuGetProcAddress_v2 at a range of CUDA versions, with flags 0
// and 2 (per-thread default stream): the version at which the answer changes and the exported
// symbol from there on. Run it on a GPU machine and against the fake and diff the outputs;
// reference/proc_address_driver580.txt is the real driver 580's answer. Without arguments it
// probes every base name the test programs use.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);

// 10000, 10010, 11010, 11040, 12020 and 12030 were added for the capture and graph entry points
// (reference/proc_address_graph_driver580.txt); the answers only list changes, so the older
// reference file reads the same with them.
constexpr int kVersions[] = {2000,  3000,  3020,  4000,  6000,  7000,  9020,  10000,
                             10010, 10020, 11000, 11010, 11020, 11030, 11040, 11060,
                             12000, 12020, 12030, 12050, 12080, 13000};

const char* const kDefaultNames[] = {
    "cuInit", "cuDriverGetVersion", "cuGetProcAddress", "cuGetErrorName", "cuGetErrorString",
    "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceTotalMem",
    "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxGetState", "cuCtxSetCurrent", "cuCtxGetCurrent", "cuCtxGetDevice",
    "cuCtxPushCurrent", "cuCtxPopCurrent", "cuCtxSynchronize", "cuStreamCreate",
    "cuStreamDestroy", "cuStreamSynchronize", "cuStreamGetDevice", "cuStreamGetCtx",
    "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventDestroy", "cuMemAlloc",
    "cuMemAllocPitch", "cuMemFree", "cuMemAllocManaged", "cuMemHostAlloc", "cuMemAllocHost",
    "cuMemFreeHost", "cuMemGetInfo", "cuPointerGetAttribute", "cuMemAllocAsync",
    "cuMemFreeAsync", "cuMemAllocFromPoolAsync", "cuMemPoolCreate", "cuMemPoolDestroy",
    "cuMemPoolTrimTo", "cuMemPoolGetAttribute", "cuMemPoolSetAttribute",
    "cuDeviceGetDefaultMemPool", "cuDeviceGetMemPool", "cuDeviceSetMemPool",
    "cuMemGetAllocationGranularity", "cuMemCreate", "cuMemRelease",
    "cuMemGetAllocationPropertiesFromHandle", "cuMemAddressReserve", "cuMemAddressFree",
    "cuMemMap", "cuMemUnmap", "cuMemSetAccess", "cuArrayCreate", "cuArray3DCreate",
    "cuArrayDestroy", "cuMipmappedArrayCreate", "cuMipmappedArrayDestroy",
    "cuArrayGetMemoryRequirements", "cuMipmappedArrayGetMemoryRequirements"};

std::string describe(GetProcV2 resolver, const char* name, int version, int flags) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  const CUresult r = resolver(name, &p, version, static_cast<cuuint64_t>(flags), &st);
  char buf[320];
  Dl_info info{};
  if (r != CUDA_SUCCESS) {
    std::snprintf(buf, sizeof buf, "ERR%d/st%d", static_cast<int>(r), static_cast<int>(st));
  } else if (p != nullptr && dladdr(p, &info) != 0 && info.dli_sname != nullptr &&
             info.dli_saddr == p) {
    std::snprintf(buf, sizeof buf, "%s", info.dli_sname);
  } else {
    std::snprintf(buf, sizeof buf, "%p?", p);
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW);
  if (handle == nullptr) {
    std::fprintf(stderr, "probe_proc_address: %s\n", dlerror());
    return 1;
  }
  auto resolver = reinterpret_cast<GetProcV2>(dlsym(handle, "cuGetProcAddress_v2"));
  if (resolver == nullptr) {
    std::fprintf(stderr, "probe_proc_address: no cuGetProcAddress_v2\n");
    return 1;
  }
  std::vector<const char*> names(argv + 1, argv + argc);
  if (names.empty()) names.assign(std::begin(kDefaultNames), std::end(kDefaultNames));
  for (const char* name : names) {
    std::printf("%s:", name);
    for (int flags : {0, 2}) {
      std::printf(" [f%d]", flags);
      std::string last;
      for (int v : kVersions) {
        const std::string cur = describe(resolver, name, v, flags);
        if (cur != last) std::printf(" %d:%s", v, cur.c_str());
        last = cur;
      }
    }
    std::printf("\n");
  }
  return 0;
}
