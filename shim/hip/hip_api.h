// The HIP and HSA entry points the shim wraps or calls (AMD GPUs, docs/rocm.md). Declarations come
// from the ROCm headers Debian packages (5.2.3), plus the one later entry point they lack.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstddef>
#include <cstdint>

// --- ROCm 6.2's addition: hipGetProcAddress, as its hip_runtime_api.h declares it ---
typedef int hipDriverProcAddressQueryResult;
extern "C" hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                        hipDriverProcAddressQueryResult* symbolStatus);

// hipMemAllocationProp as ROCm 6 lays it out; ROCm 5 (Debian's headers) put the compression type
// first and the location at byte 4. Which one a program passes follows the runtime's major version
// (its soname), which the two layouts never cross.
struct gmp_hipMemAllocationProp6 {
  int type;                  // hipMemAllocationType
  int requestedHandleTypes;  // hipMemAllocationHandleType
  hipMemLocation location;   // {hipMemLocationType type; int id;}
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
  } allocFlags;
};
static_assert(offsetof(gmp_hipMemAllocationProp6, location) == 8 && offsetof(hipMemAllocationProp, location) == 4,
              "the two layouts of hipMemAllocationProp");

// Every HIP and HSA entry point the shim wraps, by exact exported name.
#define GMP_HIP_WRAPPED(X)                                                                                        \
  X(hipMalloc) X(hipExtMallocWithFlags) X(hipMallocPitch) X(hipMalloc3D) X(hipFree) X(hipMallocManaged)          \
  X(hipHostMalloc) X(hipMallocHost) X(hipHostAlloc) X(hipHostFree) X(hipFreeHost) X(hipMallocAsync)              \
  X(hipMallocFromPoolAsync) X(hipFreeAsync) X(hipMemPoolCreate) X(hipMemPoolDestroy) X(hipMemCreate)             \
  X(hipMemRelease) X(hipMemMap) X(hipMemUnmap) X(hipMallocArray) X(hipMalloc3DArray) X(hipArrayCreate)           \
  X(hipArray3DCreate) X(hipFreeArray) X(hipArrayDestroy) X(hipGetProcAddress) X(hsa_amd_memory_pool_allocate) \
  X(hsa_amd_memory_pool_free)

// Called through their real pointers only.
#define GMP_HIP_HELPERS(X)                                                                                  \
  X(hipGetDevice) X(hipGetDeviceCount) X(hipDeviceGetName) X(hipDeviceTotalMem) X(hipDeviceGetPCIBusId)    \
  X(hipMemGetInfo) X(hipGetStreamDeviceId) X(hipDeviceGetMemPool) X(hipStreamIsCapturing)                  \
  X(hipRuntimeGetVersion) X(hsa_iterate_agents) X(hsa_agent_get_info) X(hsa_amd_agent_iterate_memory_pools) \
  X(hsa_amd_memory_pool_get_info)

namespace gmp::shim::hip {

// The function types of the entry points that hip_runtime_api.h also overloads with C++ templates
// (or marks deprecated), whose C function decltype cannot name.
namespace c_type {
using hipMalloc = hipError_t (*)(void**, size_t);
using hipMallocManaged = hipError_t (*)(void**, size_t, unsigned int);
using hipHostMalloc = hipError_t (*)(void**, size_t, unsigned int);
using hipMallocHost = hipError_t (*)(void**, size_t);
using hipHostAlloc = hipError_t (*)(void**, size_t, unsigned int);
using hipFreeHost = hipError_t (*)(void*);
using hipMallocAsync = hipError_t (*)(void**, size_t, hipStream_t);
using hipMallocFromPoolAsync = hipError_t (*)(void**, size_t, hipMemPool_t, hipStream_t);
}  // namespace c_type

enum class Entry : int {
#define GMP_HIP_ENUM(name) name,
  GMP_HIP_WRAPPED(GMP_HIP_ENUM) WrappedCount_,
  BeforeHelpers_ = WrappedCount_ - 1,
  GMP_HIP_HELPERS(GMP_HIP_ENUM)
#undef GMP_HIP_ENUM
  Count_
};
inline constexpr int kWrappedCount = static_cast<int>(Entry::WrappedCount_);
inline constexpr int kEntryCount = static_cast<int>(Entry::Count_);

}  // namespace gmp::shim::hip
