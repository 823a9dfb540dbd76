// The CUDA driver entry points the test programs use, as a struct of function pointers with the
// exact ABIs of the exported symbols (types taken from cuda.h's own declarations).
//
// Each program fills the table a different way (see driver_loader.h and prog_linked.cpp) and then
// runs the same code, so a profiler must report identical numbers for all of them.
#pragma once

#include <cuda.h>

#include <cstddef>

// X(member, base_name, per_thread, abi_version)
//   member      exact exported name of the default-stream ABI (what dlsym / PLT binding uses)
//   base_name   what a cuGetProcAddress caller asks for
//   per_thread  true where the driver also exports a per-thread-default-stream variant
//               (`<member>_ptsz`); the cudart-style loaders store the flags-2 pointer there
//   abi_version the first cudaVersion for which cuGetProcAddress(base_name) returns `member`
//               (cudaTypedefs.h; checked against driver 580). The members are the CUDA 13 ABIs:
//               at 13000 "cuCtxSynchronize" is cuCtxSynchronize_v2(CUcontext) and
//               "cuCtxGetDevice" is cuCtxGetDevice_v2(CUdevice*, CUcontext); from 12050
//               "cuStreamGetCtx" is cuStreamGetCtx_v2(CUstream, CUcontext*, CUgreenCtx*). Asking
//               with an older version would return a different ABI, so the loaders leave such
//               members null.
#define GMP_DRIVER_ENTRIES(X)                                                     \
  X(cuInit, "cuInit", false, 2000)                                                 \
  X(cuDriverGetVersion, "cuDriverGetVersion", false, 2020)                         \
  X(cuGetProcAddress_v2, "cuGetProcAddress", false, 12000)                         \
  X(cuGetErrorName, "cuGetErrorName", false, 6000)                                 \
  X(cuDeviceGet, "cuDeviceGet", false, 2000)                                       \
  X(cuDeviceGetCount, "cuDeviceGetCount", false, 2000)                             \
  X(cuDeviceGetName, "cuDeviceGetName", false, 2000)                               \
  X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", false, 3020)                          \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", false, 7000)             \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", false, 11000)       \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", false, 4000)                               \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", false, 4000)                               \
  X(cuCtxGetDevice_v2, "cuCtxGetDevice", false, 13000)                             \
  X(cuCtxPushCurrent_v2, "cuCtxPushCurrent", false, 4000)                          \
  X(cuCtxPopCurrent_v2, "cuCtxPopCurrent", false, 4000)                            \
  X(cuCtxSynchronize_v2, "cuCtxSynchronize", false, 13000)                         \
  X(cuStreamCreate, "cuStreamCreate", false, 2000)                                 \
  X(cuStreamDestroy_v2, "cuStreamDestroy", false, 4000)                            \
  X(cuStreamSynchronize, "cuStreamSynchronize", true, 2000)                        \
  X(cuStreamGetDevice, "cuStreamGetDevice", true, 12080)                           \
  X(cuStreamGetCtx_v2, "cuStreamGetCtx", true, 12050)                              \
  X(cuEventCreate, "cuEventCreate", false, 2000)                                   \
  X(cuEventRecord, "cuEventRecord", true, 2000)                                    \
  X(cuEventSynchronize, "cuEventSynchronize", false, 2000)                         \
  X(cuEventDestroy_v2, "cuEventDestroy", false, 4000)                              \
  X(cuMemAlloc_v2, "cuMemAlloc", false, 3020)                                      \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", false, 3020)                            \
  X(cuMemFree_v2, "cuMemFree", false, 3020)                                        \
  X(cuMemAllocManaged, "cuMemAllocManaged", false, 6000)                           \
  X(cuMemHostAlloc, "cuMemHostAlloc", false, 2020)                                 \
  X(cuMemAllocHost_v2, "cuMemAllocHost", false, 3020)                              \
  X(cuMemFreeHost, "cuMemFreeHost", false, 2000)                                   \
  X(cuMemGetInfo_v2, "cuMemGetInfo", false, 3020)                                  \
  X(cuPointerGetAttribute, "cuPointerGetAttribute", false, 4000)                   \
  X(cuMemAllocAsync, "cuMemAllocAsync", true, 11020)                               \
  X(cuMemFreeAsync, "cuMemFreeAsync", true, 11020)                                 \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", true, 11020)               \
  X(cuMemPoolCreate, "cuMemPoolCreate", false, 11020)                              \
  X(cuMemPoolDestroy, "cuMemPoolDestroy", false, 11020)                            \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo", false, 11020)                              \
  X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", false, 11020)                  \
  X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", false, 11020)                  \
  X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", false, 11020)          \
  X(cuDeviceGetMemPool, "cuDeviceGetMemPool", false, 11020)                        \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", false, 10020)  \
  X(cuMemCreate, "cuMemCreate", false, 10020)                                      \
  X(cuMemRelease, "cuMemRelease", false, 10020)                                    \
  X(cuMemGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle", false, 10020) \
  X(cuMemAddressReserve, "cuMemAddressReserve", false, 10020)                      \
  X(cuMemAddressFree, "cuMemAddressFree", false, 10020)                            \
  X(cuMemMap, "cuMemMap", false, 10020)                                            \
  X(cuMemUnmap, "cuMemUnmap", false, 10020)                                        \
  X(cuMemSetAccess, "cuMemSetAccess", false, 10020)                                \
  X(cuArrayCreate_v2, "cuArrayCreate", false, 3020)                                \
  X(cuArray3DCreate_v2, "cuArray3DCreate", false, 3020)                            \
  X(cuArrayDestroy, "cuArrayDestroy", false, 2000)                                 \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", false, 5000)                 \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", false, 5000)               \
  X(cuArrayGetMemoryRequirements, "cuArrayGetMemoryRequirements", false, 11060)    \
  X(cuMipmappedArrayGetMemoryRequirements, "cuMipmappedArrayGetMemoryRequirements", false, 11060)

struct DriverTable {
#define GMP_DECLARE_MEMBER(member, base, per_thread, abi) decltype(&::member) member = nullptr;
  GMP_DRIVER_ENTRIES(GMP_DECLARE_MEMBER)
#undef GMP_DECLARE_MEMBER

  // Test hook of the fake driver (not a "cu" name, never interposed). Null on a real driver.
  CUresult (*fakecuda_alloc_untracked)(unsigned long long* dptr, size_t size) = nullptr;
  void (*fakecuda_raise_in)(const char* entry_point, int sig) = nullptr;

  // How the table was filled, for messages: "cudart-style", "dlsym", "linked", "self-lookup".
  const char* how = "";
};
