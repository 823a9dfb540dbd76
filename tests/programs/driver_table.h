// The CUDA driver entry points the test programs use, as a struct of function pointers with the
// exact ABIs of the exported symbols (types taken from cuda.h's own declarations).
//
// Each program fills the table a different way (see driver_loader.h and prog_linked.cpp) and then
// runs the same code, so a profiler must report identical numbers for all of them.
#pragma once

#include <cuda.h>

#include <cstddef>

// X(member, base_name, per_thread)
//   member     exact exported name of the default-stream ABI (what dlsym / PLT binding uses)
//   base_name  what a cuGetProcAddress caller asks for
//   per_thread true for stream-ordered calls the driver also exports as `<member>_ptsz`; the
//              cudart-style loaders store the flags-2 (`_ptsz`) pointer in those members
#define GMP_DRIVER_ENTRIES(X)                                                     \
  X(cuInit, "cuInit", false)                                                      \
  X(cuDriverGetVersion, "cuDriverGetVersion", false)                              \
  X(cuGetProcAddress_v2, "cuGetProcAddress", false)                               \
  X(cuGetErrorName, "cuGetErrorName", false)                                      \
  X(cuDeviceGet, "cuDeviceGet", false)                                            \
  X(cuDeviceGetCount, "cuDeviceGetCount", false)                                  \
  X(cuDeviceGetName, "cuDeviceGetName", false)                                    \
  X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", false)                               \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", false)                  \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", false)             \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", false)                                    \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", false)                                    \
  X(cuCtxGetDevice, "cuCtxGetDevice", false)                                      \
  X(cuCtxPushCurrent_v2, "cuCtxPushCurrent", false)                               \
  X(cuCtxPopCurrent_v2, "cuCtxPopCurrent", false)                                 \
  X(cuCtxSynchronize, "cuCtxSynchronize", false)                                  \
  X(cuStreamCreate, "cuStreamCreate", false)                                      \
  X(cuStreamDestroy_v2, "cuStreamDestroy", false)                                 \
  X(cuStreamSynchronize, "cuStreamSynchronize", true)                             \
  X(cuStreamGetDevice, "cuStreamGetDevice", true)                                 \
  X(cuStreamGetCtx, "cuStreamGetCtx", false)                                      \
  X(cuEventCreate, "cuEventCreate", false)                                        \
  X(cuEventRecord, "cuEventRecord", false)                                        \
  X(cuEventSynchronize, "cuEventSynchronize", false)                              \
  X(cuEventDestroy_v2, "cuEventDestroy", false)                                   \
  X(cuMemAlloc_v2, "cuMemAlloc", false)                                           \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", false)                                 \
  X(cuMemFree_v2, "cuMemFree", false)                                             \
  X(cuMemAllocManaged, "cuMemAllocManaged", false)                                \
  X(cuMemHostAlloc, "cuMemHostAlloc", false)                                      \
  X(cuMemAllocHost_v2, "cuMemAllocHost", false)                                   \
  X(cuMemFreeHost, "cuMemFreeHost", false)                                        \
  X(cuMemGetInfo_v2, "cuMemGetInfo", false)                                       \
  X(cuPointerGetAttribute, "cuPointerGetAttribute", false)                        \
  X(cuMemAllocAsync, "cuMemAllocAsync", true)                                     \
  X(cuMemFreeAsync, "cuMemFreeAsync", true)                                       \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", true)                     \
  X(cuMemPoolCreate, "cuMemPoolCreate", false)                                    \
  X(cuMemPoolDestroy, "cuMemPoolDestroy", false)                                  \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo", false)                                    \
  X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", false)                        \
  X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", false)                        \
  X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", false)                \
  X(cuDeviceGetMemPool, "cuDeviceGetMemPool", false)                              \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", false)        \
  X(cuMemCreate, "cuMemCreate", false)                                            \
  X(cuMemRelease, "cuMemRelease", false)                                          \
  X(cuMemGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle", false) \
  X(cuMemAddressReserve, "cuMemAddressReserve", false)                            \
  X(cuMemAddressFree, "cuMemAddressFree", false)                                  \
  X(cuMemMap, "cuMemMap", false)                                                  \
  X(cuMemUnmap, "cuMemUnmap", false)                                              \
  X(cuMemSetAccess, "cuMemSetAccess", false)                                      \
  X(cuArrayCreate_v2, "cuArrayCreate", false)                                     \
  X(cuArray3DCreate_v2, "cuArray3DCreate", false)                                 \
  X(cuArrayDestroy, "cuArrayDestroy", false)                                      \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", false)                      \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", false)                    \
  X(cuArrayGetMemoryRequirements, "cuArrayGetMemoryRequirements", false)          \
  X(cuMipmappedArrayGetMemoryRequirements, "cuMipmappedArrayGetMemoryRequirements", false)

struct DriverTable {
#define GMP_DECLARE_MEMBER(member, base, per_thread) decltype(&::member) member = nullptr;
  GMP_DRIVER_ENTRIES(GMP_DECLARE_MEMBER)
#undef GMP_DECLARE_MEMBER

  // Test hook of the fake driver (not a "cu" name, never interposed). Null on a real driver.
  CUresult (*fakecuda_alloc_untracked)(unsigned long long* dptr, size_t size) = nullptr;

  // How the table was filled, for messages: "cudart-style", "dlsym", "linked", "self-lookup".
  const char* how = "";
};
