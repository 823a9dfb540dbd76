// Every driver entry point the shim wraps, by its exact exported name, and the ones it only calls.
// The routing table maps the driver's own pointer for an exact name to our wrapper of that same
// name, so an ABI (_v2, _ptsz) is never routed to another (docs/design.md §Interposition rules).
#pragma once

#include <cuda.h>

// cuda.h maps the names cuGetProcAddress, cuMemGetInfo and cuDeviceTotalMem to their _v2 functions;
// here they must mean the exported functions of those exact names (the older ABIs).
#undef cuGetProcAddress
#undef cuMemGetInfo
#undef cuDeviceTotalMem
// ... and likewise the older capture, instantiate and node ABIs, which the driver still exports.
#undef cuStreamBeginCapture
#undef cuGraphInstantiate
#undef cuGraphAddNode

#define GMP_WRAPPED_ENTRY_POINTS(X)                                                                                 \
  X(cuMemAlloc_v2)                                                                                                  \
  X(cuMemFree_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)             \
      X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)           \
          X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolTrimTo) X(cuDeviceSetMemPool) X(cuMemCreate)            \
              X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuArrayDestroy) \
                  X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy) X(cuMemHostAlloc) X(cuMemAllocHost_v2)       \
                      X(cuMemFreeHost) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuCtxSynchronize)       \
                          X(cuCtxSynchronize_v2) X(cuEventSynchronize) X(cuGetProcAddress) X(cuGetProcAddress_v2)   \
                              X(cuMemGetInfo_v2) X(cuMemGetInfo) X(cuDeviceTotalMem_v2) X(cuDeviceTotalMem) \
                                  GMP_GRAPH_ENTRY_POINTS(X)

// Stream capture and graphs (wrap_graph.cpp).
#define GMP_GRAPH_ENTRY_POINTS(X)                                                                               \
  X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2) X(cuStreamBeginCapture_v2_ptsz) \
  X(cuStreamBeginCaptureToGraph) X(cuStreamBeginCaptureToGraph_ptsz) X(cuStreamEndCapture)                      \
  X(cuStreamEndCapture_ptsz) X(cuGraphAddMemAllocNode) X(cuGraphAddMemFreeNode) X(cuGraphAddNode)               \
  X(cuGraphAddNode_v2) X(cuGraphInstantiate) X(cuGraphInstantiate_v2) X(cuGraphInstantiateWithFlags)            \
  X(cuGraphInstantiateWithParams) X(cuGraphInstantiateWithParams_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)   \
  X(cuGraphUpload) X(cuGraphUpload_ptsz) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuDeviceGraphMemTrim)        \
  X(cuDeviceSetGraphMemAttribute)

// Called through their real pointers only; optional ones may be missing on older drivers.
#define GMP_HELPER_ENTRY_POINTS(X)                                                               \
  X(cuCtxGetDevice) X(cuStreamGetDevice) X(cuDeviceGetMemPool) X(cuMemPoolGetAttribute)          \
  X(cuArrayGetMemoryRequirements) X(cuMipmappedArrayGetMemoryRequirements) X(cuDeviceGetName)    \
  X(cuDeviceGetCount) X(cuDriverGetVersion) X(cuDeviceGetPCIBusId) X(cuThreadExchangeStreamCaptureMode) \
  X(cuStreamIsCapturing) X(cuStreamGetCaptureInfo_v3) X(cuDeviceGetGraphMemAttribute)

namespace gmp::shim {

enum class Entry : int {
#define GMP_ENUM(name) name,
  GMP_WRAPPED_ENTRY_POINTS(GMP_ENUM)
  WrappedCount_,
  BeforeHelpers_ = WrappedCount_ - 1,
  GMP_HELPER_ENTRY_POINTS(GMP_ENUM)
#undef GMP_ENUM
  Count_
};

inline constexpr int kWrappedCount = static_cast<int>(Entry::WrappedCount_);
inline constexpr int kEntryCount = static_cast<int>(Entry::Count_);

}  // namespace gmp::shim
