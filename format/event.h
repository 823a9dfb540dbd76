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
  Runtime = 8,     // device memory the GPU runtime took for itself: on AMD, HSA allocations that are
                   // no HIP allocation call's (kernel-argument pools, staging buffers; docs/rocm.md)
};
inline constexpr int kKindCount = 9;
// The kinds a device's figures break down into (summary.json by_kind, reports), in their order;
// pinned host memory is the process's, not a device's.
inline constexpr Kind kDeviceKinds[] = {Kind::Linear, Kind::Pool,  Kind::Vmm,    Kind::Array,
                                        Kind::Managed, Kind::Graph, Kind::Runtime};

// What each op's general fields (address, size, stream, object, value, result) hold is in
// records.h, one struct per op, which every writer and reader goes through; ops without a struct
// there use the fields as named.
enum class Op : uint8_t {
  None = 0,
  Alloc = 1,          // an allocation call's outcome (AllocRecord)
  Free = 2,           // address; recorded before the driver call so a reused address is never live twice
  ReleaseFailed = 3,  // result: the release this thread recorded just before was refused by the driver
  PoolCreate = 4,     // PoolRecord
  PoolDestroy = 5,    // PoolRecord; releases the pool's live allocations
  PoolReserved = 6,   // a pool's reserved bytes as the driver reports them now (PoolReservedRecord)
  VmmCreate = 7,      // address = physical handle, size, device, result
  VmmRelease = 8,     // address = physical handle (before the call)
  VmmMap = 9,         // VmmMapRecord
  VmmUnmap = 10,      // address = va, size (before the call); may cover several mappings
  DeviceInfo = 11,    // once per device before its first event (DeviceInfoRecord)
  DriverMemory = 12,  // cuMemGetInfo just after a failure (DriverMemoryRecord)
  OomBundle = 13,     // written by the collector: an OOM bundle was written (OomBundleRecord)
  OomRecovered = 14,  // written by the collector: an OOM episode ended by a successful retry; size
  Alert = 15,         // written by the collector (AlertRecord)
  Sample = 16,        // written by the collector from NVML (SampleRecord)
  // Attribution (docs/attribution.md): names are ids in attribution.jsonl (NameRecord).
  Mark = 17,
  RangePush = 18,     // the thread's innermost range until its RangePop
  RangePop = 19,
  Pause = 20,         // allocations stop being recorded (frees still are) until Resume
  Resume = 21,
  // A framework's caching allocator seen from inside, through the bridge (docs/framework-bridge.md).
  // Sizes are the sizes the program asked for; address is the device pointer; stream the
  // allocator's stream. Kind None, Api torch_caching_allocator.
  TensorAlloc = 22,          // FrameworkBlockRecord
  TensorFreeRequested = 23,  // address, size: the program let go; work on other streams may still use it
  TensorFreeCompleted = 24,  // address, size: the block is back in the framework's cache
  SegmentAlloc = 25,         // FrameworkBlockRecord: the framework reserved a segment
  SegmentFree = 26,          // address, size: it gave one back to the driver
  SegmentMap = 27,           // FrameworkBlockRecord: pages mapped into an expandable segment
  SegmentUnmap = 28,         // address, size
  FrameworkOom = 29,         // the framework raised OOM (FrameworkOomRecord)
  FrameworkOomFigures = 30,  // the framework's own figures at its OOM, before it raises
  FrameworkAttach = 31,      // the bridge attached, was refused or detached (FrameworkAttachRecord)
  Cleanup = 32,              // written by the collector: the watchdog trimmed a device's pools after a
                             // critical alert (CleanupRecord)
  DeviceLimit = 33,          // GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md), from the shim (DeviceLimitRecord)
  // CUDA graphs (docs/accounting.md §Graph memory), kind Graph. A graph is named by its CUgraph handle,
  // an executable graph by its CUgraphExec handle. An allocation made while a stream captures is a
  // node of the capture's graph: nothing is allocated then.
  GraphAllocNode = 34,    // GraphNodeRecord; result
  GraphFreeNode = 35,     // GraphNodeRecord: the address freed at launch; result
  CaptureBegin = 36,      // CaptureBeginRecord; result. Its stack is where the graph was captured
  CaptureEnd = 37,        // CaptureEndRecord; result
  GraphInstantiate = 38,  // GraphInstantiateRecord; result
  GraphLaunch = 39,       // GraphLaunchRecord; result. api cuGraphUpload*: memory mapped, nothing launched
  GraphExecDestroy = 40,  // GraphExecDestroyRecord
  GraphDestroy = 41,      // GraphDestroyRecord
  GraphMemory = 42,       // the device's graph memory pool as the driver reports it now (GraphMemoryRecord)
  GraphChild = 43,        // a child graph's memory nodes moved into its parent (GraphChildRecord)
  // Memory categories (docs/framework-bridge.md §Categories), from the Python bootstrap, api
  // torch_caching_allocator: facts the tools decide each tensor's category from.
  TensorLabel = 44,  // TensorLabelRecord: the tensor live at address is a parameter, gradient, ...
  Phase = 45,        // PhaseRecord: a training phase begins (forward, backward, optimizer step)
};
inline constexpr int kOpCount = 46;

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

// What a tensor's memory is for (docs/framework-bridge.md §Categories). The first four come from
// labels (TensorLabel's value), the rest the tools decide from phases and call sites. Stored in the
// trace: append only.
enum class TensorCategory : uint8_t {
  Unknown = 0,
  Parameters = 1,      // nn.Module parameters and buffers, an optimizer's parameters
  Gradients = 2,       // their .grad storages
  OptimizerState = 3,  // tensors in an optimizer's state
  Activations = 4,     // allocated in a forward phase, alive when the next backward begins
  Temporaries = 5,     // allocated and freed within one phase
  KvCache = 6,         // allocated by a model's KV cache code
  Other = 7,
};
inline constexpr int kTensorCategoryCount = 8;
std::string_view tensor_category_name(TensorCategory c);  // "optimizer_state"; "unknown" for other values

// Op::Phase's value: where a training step is. Forward is everything outside backward and the
// optimizer's step (so it includes loading the batch and computing the loss).
enum class TrainingPhase : uint8_t { None = 0, Forward = 1, Backward = 2, Optimizer = 3 };
std::string_view training_phase_name(TrainingPhase p);  // "forward", "backward", "optimizer"; "none"

// Which driver entry point produced the event. Stored as a number in the trace: append only. The
// names are the exported ones; cuda.h maps three of them to newer ABIs by macro, kept out here.
// The HIP and HSA entry points (AMD GPUs, docs/rocm.md), appended after the CUDA ones; one list for
// the enum and the names.
#define GMP_HIP_APIS(X)                                                                                    \
  X(hipMalloc) X(hipExtMallocWithFlags) X(hipMallocPitch) X(hipMalloc3D) X(hipFree) X(hipMallocManaged)    \
  X(hipHostMalloc) X(hipMallocHost) X(hipHostAlloc) X(hipHostFree) X(hipFreeHost) X(hipMallocAsync)        \
  X(hipMallocFromPoolAsync) X(hipFreeAsync) X(hipMemPoolCreate) X(hipMemPoolDestroy) X(hipMemCreate)       \
  X(hipMemRelease) X(hipMemMap) X(hipMemUnmap) X(hipMallocArray) X(hipMalloc3DArray) X(hipArrayCreate)     \
  X(hipArray3DCreate) X(hipFreeArray) X(hipArrayDestroy) X(hsa_amd_memory_pool_allocate)                   \
  X(hsa_amd_memory_pool_free)

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
#define GMP_API_ENUM(name) name,
  GMP_HIP_APIS(GMP_API_ENUM)
#undef GMP_API_ENUM
  Count_
};
#pragma pop_macro("cuGraphAddNode")
#pragma pop_macro("cuGraphInstantiate")
#pragma pop_macro("cuStreamBeginCapture")

// The alert in an Op::Alert event's value field (docs/alerts.md).
enum class AlertType : uint8_t { Warning = 1, Critical = 2, Fragmentation = 3, Growth = 4 };

inline constexpr int16_t kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY

struct Event {
  // The event's time: CLOCK_MONOTONIC nanoseconds from the collector on and in the trace; in the
  // ring, before the collector converts it, the event clock's ticks (collector/clock.h), which
  // only the ring and that conversion read.
  union {
    uint64_t timestamp_ns;
    uint64_t ticks;
  };
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
