// The fixed-size event record: what the shim pushes into the ring and what the trace file stores.
// Layout is part of the trace format (docs/trace-format.md); change it only with a version bump.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace gmp {

enum class Kind : uint8_t {
  None = 0,
  Linear = 1,      // cuMemAlloc_v2, cuMemAllocPitch_v2
  Pool = 2,        // stream-ordered allocations from a memory pool
  Vmm = 3,         // cuMemCreate handles and cuMemMap mappings
  Array = 4,       // CUDA arrays and mipmapped arrays
  Managed = 5,     // cuMemAllocManaged
  HostPinned = 6,  // cuMemHostAlloc, cuMemAllocHost_v2
  Graph = 7,       // CUDA graph memory: allocation nodes, live from their launch until freed
};
inline constexpr int kKindCount = 8;

enum class Op : uint8_t {
  None = 0,
  Alloc = 1,          // address, size, result; pool kind: object = pool, value = pool reserved after
                      // (kNoReading: not read; the collector's pool_reserved events carry it)
  Free = 2,           // address; recorded before the driver call so a reused address is never live twice
  ReleaseFailed = 3,  // result: the release this thread recorded just before was refused by the driver
  PoolCreate = 4,     // object = pool, device
  PoolDestroy = 5,    // object = pool; releases the pool's live allocations
  PoolReserved = 6,   // object = pool, value = the pool's reserved bytes as the driver reports them now,
                      // size = its high watermark (RESERVED_MEM_HIGH; 0 when not read)
  VmmCreate = 7,      // address = physical handle, size, device, result
  VmmRelease = 8,     // address = physical handle (before the call)
  VmmMap = 9,         // address = va, size, object = physical handle, value = offset, result
  VmmUnmap = 10,      // address = va, size (before the call); may cover several mappings
  DeviceInfo = 11,    // device, size = total bytes, once per device before its first event
  DriverMemory = 12,  // device, size = total, value = free, as cuMemGetInfo said just after a failure
  OomBundle = 13,     // written by the collector: an OOM bundle was written; address = its sequence number
  OomRecovered = 14,  // written by the collector: an OOM episode ended by a successful retry
  Alert = 15,         // written by the collector: device, value = AlertType, result = 1 fired / 0 cleared,
                      // size = allocated, object = reserved, address = threshold bytes
  Sample = 16,        // written by the collector from NVML: device, size = device used, object = device
                      // total, value = this process's usage (UINT64_MAX when NVML does not say)
  // Attribution (docs/attribution.md): names are ids in attribution.jsonl.
  Mark = 17,          // address = name id
  RangePush = 18,     // address = name id; the thread's innermost range until its RangePop
  RangePop = 19,
  Pause = 20,         // allocations stop being recorded (frees still are) until Resume
  Resume = 21,
  // A framework's caching allocator seen from inside, through the bridge (docs/framework-bridge.md).
  // Sizes are the sizes the program asked for; address is the device pointer; stream the
  // allocator's stream. Kind None, Api torch_caching_allocator.
  // object of TensorAlloc, SegmentAlloc and SegmentMap: the framework's memory pool (framework_pool_id),
  // 0 for its default pool.
  TensorAlloc = 22,          // address, size, stream; value = kSeeded: live before the bridge attached
  TensorFreeRequested = 23,  // address, size: the program let go; work on other streams may still use it
  TensorFreeCompleted = 24,  // address, size: the block is back in the framework's cache
  SegmentAlloc = 25,         // address, size, stream: the framework reserved a segment; value = kSeeded
  SegmentFree = 26,          // address, size: it gave one back to the driver
  SegmentMap = 27,           // address, size: pages mapped into an expandable segment; value = kSeeded
  SegmentUnmap = 28,         // address, size
  FrameworkOom = 29,         // size = bytes asked for, value = device free bytes: the framework raised OOM
  FrameworkOomFigures = 30,  // the framework's own figures at its OOM, before it raises: size = bytes
                             // asked for, value = device free, stream = capacity (total, or the memory
                             // fraction's limit), object = allocated, address = reserved (framework bytes)
  FrameworkAttach = 31,      // result = 1 attached, 0 refused or detached; value = version
                             // (major << 16 | minor << 8 | patch); object = FrameworkRefusal when refused
  Cleanup = 32,              // written by the collector: the watchdog trimmed a device's pools after a
                             // critical alert; device, size = bytes given back, value = pools trimmed
  // GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md), from the shim: device, value = the limit, size = what
  // the driver holds for the process beyond its allocations (context, modules: NVML's figure for the
  // process less the allocations), as just measured. result 2 (out of memory): the limit refused an
  // allocation; object = the process's bytes on the device before it (the context included), address = what
  // the allocation would have added.
  DeviceLimit = 33,
  // CUDA graphs (docs/accounting.md §Graph memory), kind Graph. A graph is named by its CUgraph handle
  // (object), an executable graph by its CUgraphExec handle (address of the exec ops). An allocation
  // made while a stream captures is a node of the capture's graph: nothing is allocated then.
  GraphAllocNode = 34,    // address = the node's virtual address, size, object = graph, stream = the
                          // capturing stream (0: added with cuGraphAdd*), value = capture id; result
  GraphFreeNode = 35,     // address freed at launch, object = graph, stream, value = capture id; result
  CaptureBegin = 36,      // stream, object = the capture's graph, value = capture id, size = CUstreamCaptureMode;
                          // result. Its stack is where the graph was captured
  CaptureEnd = 37,        // stream, object = graph (0 when the capture was invalidated), value = capture id; result
  GraphInstantiate = 38,  // object = graph, address = exec, value = instantiate flags; result
  GraphLaunch = 39,       // address = exec, stream, size = its allocation nodes' bytes (0: none or not
                          // known); result. api cuGraphUpload*: memory mapped, nothing launched
  GraphExecDestroy = 40,  // address = exec
  GraphDestroy = 41,      // object = graph
  GraphMemory = 42,       // device: the graph memory pool as the driver reports it now: size = reserved,
                          // value = reserved high watermark, object = used, address = used high watermark
  GraphChild = 43,        // object = parent graph, address = child graph whose memory nodes moved into it
};
inline constexpr int kOpCount = 44;

// Event::value of a pool Alloc that carries no reading of the pool (docs/accounting.md, Pool).
inline constexpr uint64_t kNoReading = UINT64_MAX;

// Event::value of a TensorAlloc, SegmentAlloc or SegmentMap that describes what existed when the
// bridge attached (from the framework's snapshot), not something that happened then.
inline constexpr uint64_t kSeeded = 1;

// Why the bridge did not attach or detached (FrameworkAttach, object); docs/framework-bridge.md.
enum class FrameworkRefusal : uint8_t {
  None = 0,
  UnknownVersion = 1,     // no layout for this framework version
  OtherBackend = 2,       // the allocator is not the native caching allocator (cudaMallocAsync, pluggable)
  NoAllocator = 3,        // the allocator symbol or object is missing
  AttachFailed = 4,       // the framework refused the tracker (threw)
  SelfCheckFailed = 5,    // the probe allocation did not arrive as expected: detached
  Disabled = 6,           // GPUMEMPROF_FRAMEWORK=off
};
std::string_view framework_refusal_name(FrameworkRefusal r);
// FrameworkAttach's value: the framework's version packed, and back to "2.11.0".
inline uint64_t framework_version(unsigned major, unsigned minor, unsigned patch) {
  return (uint64_t{major & 0xffff} << 16) | (uint64_t{minor & 0xff} << 8) | uint64_t{patch & 0xff};
}
std::string framework_version_text(uint64_t packed);
// PyTorch's MempoolId_t, a pair of counters ({0, n}: a CUDA graph's private pool; {n, 0}: a MemPool),
// packed in one 64-bit field, and back to "first,second". {0, 0}, the default pool, packs to 0.
inline uint64_t framework_pool_id(uint64_t first, uint64_t second) {
  return (first << 32) | (second & 0xffffffffull);
}
std::string framework_pool_text(uint64_t packed);

// Which driver entry point produced the event. Stored as a number in the trace: append only. The
// names are the exported ones; cuda.h maps three of them to newer ABIs by macro, kept out here.
#pragma push_macro("cuStreamBeginCapture")
#pragma push_macro("cuGraphInstantiate")
#pragma push_macro("cuGraphAddNode")
#undef cuStreamBeginCapture
#undef cuGraphInstantiate
#undef cuGraphAddNode
enum class Api : uint16_t {
  None = 0,
  cuMemAlloc_v2, cuMemFree_v2, cuMemAllocPitch_v2, cuMemAllocManaged,
  cuMemAllocAsync, cuMemAllocAsync_ptsz, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz,
  cuMemFreeAsync, cuMemFreeAsync_ptsz, cuMemPoolCreate, cuMemPoolDestroy, cuMemPoolTrimTo,
  cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap,
  cuArrayCreate_v2, cuArray3DCreate_v2, cuArrayDestroy, cuMipmappedArrayCreate, cuMipmappedArrayDestroy,
  cuMemHostAlloc, cuMemAllocHost_v2, cuMemFreeHost,
  cuStreamSynchronize, cuStreamSynchronize_ptsz, cuCtxSynchronize, cuEventSynchronize,
  cuDeviceSetMemPool, Collector,
  gpumemprof_api,  // marks, ranges, pause and resume from include/gpumemprof.h
  nvtx,            // ranges and marks from NVTX, through the injection interface
  torch_caching_allocator,  // PyTorch's CUDA caching allocator, through the framework bridge
  cuStreamBeginCapture, cuStreamBeginCapture_ptsz, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
  cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz, cuStreamEndCapture, cuStreamEndCapture_ptsz,
  cuGraphAddMemAllocNode, cuGraphAddMemFreeNode, cuGraphAddNode, cuGraphAddNode_v2,
  cuGraphInstantiate, cuGraphInstantiate_v2, cuGraphInstantiateWithFlags, cuGraphInstantiateWithParams,
  cuGraphInstantiateWithParams_ptsz, cuGraphLaunch, cuGraphLaunch_ptsz, cuGraphUpload, cuGraphUpload_ptsz,
  cuGraphExecDestroy, cuGraphDestroy, cuDeviceGraphMemTrim, cuDeviceSetGraphMemAttribute,
  Count_
};
#pragma pop_macro("cuGraphAddNode")
#pragma pop_macro("cuGraphInstantiate")
#pragma pop_macro("cuStreamBeginCapture")

// The alert in an Op::Alert event's value field (docs/alerts.md).
enum class AlertType : uint8_t { Warning = 1, Critical = 2, Fragmentation = 3, Growth = 4 };

inline constexpr int16_t kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY

struct Event {
  uint64_t timestamp_ns;  // CLOCK_MONOTONIC
  uint64_t address;       // device pointer, host pointer, array or physical handle, or mapped va
  uint64_t size;
  uint64_t stream;
  uint64_t object;        // pool handle (pool ops), physical handle (VmmMap)
  uint64_t value;         // op-specific, see Op
  uint32_t thread_id;     // kernel tid
  uint32_t stack_id;      // 0 = no stack captured; else a stack id in attribution.jsonl
  int16_t device;         // CUDA ordinal, -1 when not a device (pinned host memory) or unknown
  Kind kind;
  Op op;
  Api api;
  int16_t result;         // CUresult (all values fit in 16 bits)
};
static_assert(sizeof(Event) == 64, "Event is a 64-byte record in the trace format");

// Nanoseconds from `start` to `ts` on the event clock; 0 for a time before it.
inline uint64_t since(uint64_t ts, uint64_t start) { return ts > start ? ts - start : 0; }

std::string_view kind_name(Kind k);
std::string_view op_name(Op o);
std::string_view api_name(Api a);
std::string alert_type_name(AlertType t);  // "warning", ...; "unknown" for other values

}  // namespace gmp
