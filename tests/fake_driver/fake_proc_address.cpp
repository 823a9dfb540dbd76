// cuGetProcAddress (old 4-argument ABI, CUDA 11.3+) and cuGetProcAddress_v2 (CUDA 12.0+).
//
// Like the real driver, a request names a *base* symbol ("cuMemAlloc"); the driver picks the
// exported ABI from the requested CUDA version and the flags and returns the address of that
// exported symbol. The library is linked with -Bsymbolic, so the addresses below are always
// this library's own definitions, equal to dlsym(handle, exported_name), even when a profiler
// preloads functions of the same names.
//
// For each base name the entry with the highest min_version <= cudaVersion wins; with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM only among the per-thread entries ("_ptsz") of
// a name that has any, among the default-stream entries otherwise. The table and its version
// thresholds match what the real driver 580 (CUDA 13.0) returns for the same requests (probed
// on an H200, see reference/), e.g. cuCtxSynchronize -> cuCtxSynchronize_v2 (new ABI with a
// context argument) from 13000, except that the fake has no pre-_v2 legacy exports (cuMemAlloc
// below 3020 is "version not sufficient" here, the 32-bit legacy cuMemAlloc on the real driver).
// Result codes: see the two functions at the end.
#include "fake_capture.h"

#include <cstring>

namespace {

struct Entry {
  const char* base;      // name a caller asks for
  const char* exported;  // exact exported symbol handed out (documentation / tests)
  int min_version;       // first CUDA version that gets this ABI
  bool per_thread;       // the _ptsz variant, chosen with the per-thread flag
  void* fn;
};

template <typename F>
void* fp(F* f) {
  return reinterpret_cast<void*>(f);
}

#define FAKE_ENTRY(base, fn, ver) {base, #fn, ver, false, fp(&fn)}
#define FAKE_PTSZ(base, fn, ver) {base, #fn, ver, true, fp(&fn)}

const Entry kEntries[] = {
    // initialisation, version, errors, devices
    FAKE_ENTRY("cuInit", cuInit, 2000),
    FAKE_ENTRY("cuDriverGetVersion", cuDriverGetVersion, 2020),
    FAKE_ENTRY("cuGetErrorName", cuGetErrorName, 6000),
    FAKE_ENTRY("cuGetErrorString", cuGetErrorString, 6000),
    FAKE_ENTRY("cuDeviceGet", cuDeviceGet, 2000),
    FAKE_ENTRY("cuDeviceGetCount", cuDeviceGetCount, 2000),
    FAKE_ENTRY("cuDeviceGetName", cuDeviceGetName, 2000),
    FAKE_ENTRY("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId, 4010),
    {"cuDeviceTotalMem", "cuDeviceTotalMem", 2000, false, fp(&fake_cuDeviceTotalMem_v1)},
    FAKE_ENTRY("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020),
    FAKE_ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute, 2000),
    // contexts
    FAKE_ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000),
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", 7000, false,
     fp(&fake_cuDevicePrimaryCtxRelease_v1)},
    FAKE_ENTRY("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 11000),
    FAKE_ENTRY("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState, 7000),
    FAKE_ENTRY("cuCtxSetCurrent", cuCtxSetCurrent, 4000),
    FAKE_ENTRY("cuCtxGetCurrent", cuCtxGetCurrent, 4000),
    FAKE_ENTRY("cuCtxGetDevice", cuCtxGetDevice, 2000),
    FAKE_ENTRY("cuCtxGetDevice", cuCtxGetDevice_v2, 13000),
    FAKE_ENTRY("cuCtxPushCurrent", cuCtxPushCurrent_v2, 4000),
    FAKE_ENTRY("cuCtxPopCurrent", cuCtxPopCurrent_v2, 4000),
    FAKE_ENTRY("cuCtxSynchronize", cuCtxSynchronize, 2000),
    FAKE_ENTRY("cuCtxSynchronize", cuCtxSynchronize_v2, 13000),
    // streams and events
    FAKE_ENTRY("cuStreamCreate", cuStreamCreate, 2000),
    FAKE_ENTRY("cuStreamDestroy", cuStreamDestroy_v2, 4000),
    FAKE_ENTRY("cuStreamSynchronize", cuStreamSynchronize, 2000),
    FAKE_PTSZ("cuStreamSynchronize", cuStreamSynchronize_ptsz, 7000),
    FAKE_ENTRY("cuStreamGetDevice", cuStreamGetDevice, 12080),
    FAKE_PTSZ("cuStreamGetDevice", cuStreamGetDevice_ptsz, 12080),
    FAKE_ENTRY("cuStreamGetCtx", cuStreamGetCtx, 9020),
    FAKE_PTSZ("cuStreamGetCtx", cuStreamGetCtx_ptsz, 9020),
    FAKE_ENTRY("cuStreamGetCtx", cuStreamGetCtx_v2, 12050),
    FAKE_PTSZ("cuStreamGetCtx", cuStreamGetCtx_v2_ptsz, 12050),
    FAKE_ENTRY("cuEventCreate", cuEventCreate, 2000),
    FAKE_ENTRY("cuEventRecord", cuEventRecord, 2000),
    FAKE_PTSZ("cuEventRecord", cuEventRecord_ptsz, 7000),
    FAKE_ENTRY("cuEventSynchronize", cuEventSynchronize, 2000),
    FAKE_ENTRY("cuEventDestroy", cuEventDestroy_v2, 4000),
    // linear, managed, pinned host memory
    FAKE_ENTRY("cuMemAlloc", cuMemAlloc_v2, 3020),
    FAKE_ENTRY("cuMemAllocPitch", cuMemAllocPitch_v2, 3020),
    FAKE_ENTRY("cuMemFree", cuMemFree_v2, 3020),
    FAKE_ENTRY("cuMemAllocManaged", cuMemAllocManaged, 6000),
    FAKE_ENTRY("cuMemHostAlloc", cuMemHostAlloc, 2020),
    FAKE_ENTRY("cuMemAllocHost", cuMemAllocHost_v2, 3020),
    FAKE_ENTRY("cuMemFreeHost", cuMemFreeHost, 2000),
    {"cuMemGetInfo", "cuMemGetInfo", 2000, false, fp(&fake_cuMemGetInfo_v1)},
    FAKE_ENTRY("cuMemGetInfo", cuMemGetInfo_v2, 3020),
    FAKE_ENTRY("cuPointerGetAttribute", cuPointerGetAttribute, 4000),
    // stream-ordered allocator
    FAKE_ENTRY("cuMemAllocAsync", cuMemAllocAsync, 11020),
    FAKE_PTSZ("cuMemAllocAsync", cuMemAllocAsync_ptsz, 11020),
    FAKE_ENTRY("cuMemFreeAsync", cuMemFreeAsync, 11020),
    FAKE_PTSZ("cuMemFreeAsync", cuMemFreeAsync_ptsz, 11020),
    FAKE_ENTRY("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020),
    FAKE_PTSZ("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync_ptsz, 11020),
    FAKE_ENTRY("cuMemPoolCreate", cuMemPoolCreate, 11020),
    FAKE_ENTRY("cuMemPoolDestroy", cuMemPoolDestroy, 11020),
    FAKE_ENTRY("cuMemPoolTrimTo", cuMemPoolTrimTo, 11020),
    FAKE_ENTRY("cuMemPoolGetAttribute", cuMemPoolGetAttribute, 11020),
    FAKE_ENTRY("cuMemPoolSetAttribute", cuMemPoolSetAttribute, 11020),
    FAKE_ENTRY("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool, 11020),
    FAKE_ENTRY("cuDeviceGetMemPool", cuDeviceGetMemPool, 11020),
    FAKE_ENTRY("cuDeviceSetMemPool", cuDeviceSetMemPool, 11020),
    // virtual memory management
    FAKE_ENTRY("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity, 10020),
    FAKE_ENTRY("cuMemCreate", cuMemCreate, 10020),
    FAKE_ENTRY("cuMemRelease", cuMemRelease, 10020),
    FAKE_ENTRY("cuMemGetAllocationPropertiesFromHandle", cuMemGetAllocationPropertiesFromHandle,
               10020),
    FAKE_ENTRY("cuMemAddressReserve", cuMemAddressReserve, 10020),
    FAKE_ENTRY("cuMemAddressFree", cuMemAddressFree, 10020),
    FAKE_ENTRY("cuMemMap", cuMemMap, 10020),
    FAKE_ENTRY("cuMemUnmap", cuMemUnmap, 10020),
    FAKE_ENTRY("cuMemSetAccess", cuMemSetAccess, 10020),
    // arrays
    FAKE_ENTRY("cuArrayCreate", cuArrayCreate_v2, 3020),
    FAKE_ENTRY("cuArray3DCreate", cuArray3DCreate_v2, 3020),
    FAKE_ENTRY("cuArrayDestroy", cuArrayDestroy, 2000),
    FAKE_ENTRY("cuMipmappedArrayCreate", cuMipmappedArrayCreate, 5000),
    FAKE_ENTRY("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy, 5000),
    FAKE_ENTRY("cuArrayGetMemoryRequirements", cuArrayGetMemoryRequirements, 11060),
    FAKE_ENTRY("cuMipmappedArrayGetMemoryRequirements", cuMipmappedArrayGetMemoryRequirements,
               11060),
    // memsets and stream dependencies (work that a capture records)
    FAKE_ENTRY("cuMemsetD8Async", cuMemsetD8Async, 3020),
    FAKE_PTSZ("cuMemsetD8Async", cuMemsetD8Async_ptsz, 7000),
    FAKE_ENTRY("cuMemsetD32Async", cuMemsetD32Async, 3020),
    FAKE_PTSZ("cuMemsetD32Async", cuMemsetD32Async_ptsz, 7000),
    FAKE_ENTRY("cuStreamWaitEvent", cuStreamWaitEvent, 3020),
    FAKE_PTSZ("cuStreamWaitEvent", cuStreamWaitEvent_ptsz, 7000),
    FAKE_ENTRY("cuStreamQuery", cuStreamQuery, 2000),
    FAKE_PTSZ("cuStreamQuery", cuStreamQuery_ptsz, 7000),
    FAKE_ENTRY("cuEventQuery", cuEventQuery, 2000),
    // stream capture (reference/proc_address_graph_driver580.txt)
    {"cuStreamBeginCapture", "cuStreamBeginCapture", 10000, false,
     fp(&fake_cuStreamBeginCapture_v1)},
    FAKE_PTSZ("cuStreamBeginCapture", cuStreamBeginCapture_ptsz, 10000),
    FAKE_ENTRY("cuStreamBeginCapture", cuStreamBeginCapture_v2, 10010),
    FAKE_PTSZ("cuStreamBeginCapture", cuStreamBeginCapture_v2_ptsz, 10010),
    FAKE_ENTRY("cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph, 12030),
    FAKE_PTSZ("cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph_ptsz, 12030),
    FAKE_ENTRY("cuStreamEndCapture", cuStreamEndCapture, 10000),
    FAKE_PTSZ("cuStreamEndCapture", cuStreamEndCapture_ptsz, 10000),
    FAKE_ENTRY("cuStreamIsCapturing", cuStreamIsCapturing, 10000),
    FAKE_PTSZ("cuStreamIsCapturing", cuStreamIsCapturing_ptsz, 10000),
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo", 10010, false,
     fp(&fake_cuStreamGetCaptureInfo_v1)},
    FAKE_PTSZ("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_ptsz, 10010),
    FAKE_ENTRY("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v2, 11030),
    FAKE_PTSZ("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v2_ptsz, 11030),
    FAKE_ENTRY("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3, 12030),
    FAKE_PTSZ("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3_ptsz, 12030),
    FAKE_ENTRY("cuThreadExchangeStreamCaptureMode", cuThreadExchangeStreamCaptureMode, 10010),
    // graphs
    FAKE_ENTRY("cuGraphCreate", cuGraphCreate, 10000),
    FAKE_ENTRY("cuGraphDestroy", cuGraphDestroy, 10000),
    FAKE_ENTRY("cuGraphAddMemAllocNode", cuGraphAddMemAllocNode, 11040),
    FAKE_ENTRY("cuGraphAddMemFreeNode", cuGraphAddMemFreeNode, 11040),
    {"cuGraphAddNode", "cuGraphAddNode", 12020, false, fp(&fake_cuGraphAddNode_v1)},
    FAKE_ENTRY("cuGraphAddNode", cuGraphAddNode_v2, 12030),
    FAKE_ENTRY("cuGraphAddChildGraphNode", cuGraphAddChildGraphNode, 10000),
    FAKE_ENTRY("cuGraphAddEmptyNode", cuGraphAddEmptyNode, 10000),
    FAKE_ENTRY("cuGraphNodeGetType", cuGraphNodeGetType, 10000),
    FAKE_ENTRY("cuGraphMemAllocNodeGetParams", cuGraphMemAllocNodeGetParams, 11040),
    FAKE_ENTRY("cuGraphMemFreeNodeGetParams", cuGraphMemFreeNodeGetParams, 11040),
    // "cuGraphInstantiate" stays the old 5-argument ABI at every version (measured), although
    // cuda.h maps the name to cuGraphInstantiateWithFlags.
    {"cuGraphInstantiate", "cuGraphInstantiate", 10000, false, fp(&fake_cuGraphInstantiate_v1)},
    FAKE_ENTRY("cuGraphInstantiate", cuGraphInstantiate_v2, 11000),
    FAKE_ENTRY("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, 11040),
    FAKE_ENTRY("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams, 12000),
    FAKE_PTSZ("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams_ptsz, 12000),
    FAKE_ENTRY("cuGraphExecDestroy", cuGraphExecDestroy, 10000),
    FAKE_ENTRY("cuGraphLaunch", cuGraphLaunch, 10000),
    FAKE_PTSZ("cuGraphLaunch", cuGraphLaunch_ptsz, 10000),
    FAKE_ENTRY("cuGraphUpload", cuGraphUpload, 11010),
    FAKE_PTSZ("cuGraphUpload", cuGraphUpload_ptsz, 11010),
    FAKE_ENTRY("cuDeviceGetGraphMemAttribute", cuDeviceGetGraphMemAttribute, 11040),
    FAKE_ENTRY("cuDeviceSetGraphMemAttribute", cuDeviceSetGraphMemAttribute, 11040),
    FAKE_ENTRY("cuDeviceGraphMemTrim", cuDeviceGraphMemTrim, 11040),
    // the resolver itself
    {"cuGetProcAddress", "cuGetProcAddress", 11030, false, fp(&fake_cuGetProcAddress_v1)},
    FAKE_ENTRY("cuGetProcAddress", cuGetProcAddress_v2, 12000),
};

#undef FAKE_ENTRY
#undef FAKE_PTSZ

enum class Lookup { Found, NotFound, VersionNotSufficient };

Lookup lookup(const char* symbol, int cudaVersion, cuuint64_t flags, void** fn) {
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  bool known = false;
  bool has_per_thread = false;     // the name has a _ptsz variant at some version
  const Entry* best = nullptr;     // best default-stream entry
  const Entry* best_pt = nullptr;  // best per-thread entry
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.base, symbol) != 0) continue;
    known = true;
    has_per_thread |= e.per_thread;
    if (e.min_version > cudaVersion) continue;
    const Entry*& slot = e.per_thread ? best_pt : best;
    if (slot == nullptr || e.min_version > slot->min_version) slot = &e;
  }
  // Under the per-thread flag a name with _ptsz variants gets only those (the real driver does
  // not fall back to the legacy-stream export when the _ptsz one is newer than cudaVersion);
  // a name without any falls back to its default export.
  const Entry* chosen = (per_thread && has_per_thread) ? best_pt : best;
  if (chosen == nullptr) return known ? Lookup::VersionNotSufficient : Lookup::NotFound;
  *fn = chosen->fn;
  return Lookup::Found;
}

// Argument checks shared by both ABIs. The real driver crashes on a NULL symbol or pfn; the fake
// returns CUDA_ERROR_INVALID_VALUE instead.
bool valid_request(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  return symbol != nullptr && pfn != nullptr && (flags & ~kKnownFlags) == 0 &&
         cudaVersion <= fakecuda::kDriverVersion;
}

}  // namespace

extern "C" {

// As measured on driver 580 (CUDA 13.0): unknown symbol or too-low version -> CUDA_SUCCESS with
// *pfn = NULL and the status saying why; a version above the driver's or unknown flags ->
// CUDA_ERROR_INVALID_VALUE with *pfn and *symbolStatus untouched.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  if (!valid_request(symbol, pfn, cudaVersion, flags)) return CUDA_ERROR_INVALID_VALUE;
  void* fn = nullptr;
  const Lookup result = lookup(symbol, cudaVersion, flags, &fn);
  *pfn = fn;
  if (symbolStatus != nullptr) {
    *symbolStatus = result == Lookup::Found      ? CU_GET_PROC_ADDRESS_SUCCESS
                    : result == Lookup::NotFound ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                                                 : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  }
  return CUDA_SUCCESS;
}

// Old 4-argument ABI (CUDA 11.3+), as measured: not found / too-low version ->
// CUDA_ERROR_NOT_FOUND with *pfn untouched.
CUresult fake_cuGetProcAddress_v1(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags) {
  if (!valid_request(symbol, pfn, cudaVersion, flags)) return CUDA_ERROR_INVALID_VALUE;
  void* fn = nullptr;
  if (lookup(symbol, cudaVersion, flags, &fn) != Lookup::Found) return CUDA_ERROR_NOT_FOUND;
  *pfn = fn;
  return CUDA_SUCCESS;
}

}  // extern "C"
