// One record type per event op: what each of Event's general fields (address, size, stream,
// object, value, result) means for that op, spelled once. The shim and the collector build events
// with to_event(), the collector and the tools decode them with from_event(); the ring and the
// trace keep the fixed 64-byte Event (event.h), so adding a record type changes no layout.
//
// Each struct names its own fields; to_event() sets the op and those fields only, leaving the
// header (time, thread, device, stack, api, kind) to the caller. from_event() does not check the op:
// callers dispatch on e.op first. Ops whose fields mean what their names say (Free, VmmCreate,
// Segment*, Tensor frees ...) have no struct here.
#pragma once

#include <cstdint>

#include "event.h"

namespace gmp {

namespace detail {
template <typename T>
constexpr uint64_t u64(T v) { return static_cast<uint64_t>(v); }
}  // namespace detail

// Op::Alloc. A pool allocation also names its pool and, when the shim read it, the pool's reserved
// bytes after the allocation (kNoReading otherwise; the collector's PoolReserved events carry it).
struct AllocRecord {
  static constexpr Op kOp = Op::Alloc;
  uint64_t address = 0;  // 0 when the call failed
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t pool = 0;
  uint64_t pool_reserved = 0;
  void to_event(Event& e) const {
    e.op = kOp, e.address = address, e.size = size, e.stream = stream, e.object = pool, e.value = pool_reserved;
  }
  static AllocRecord from_event(const Event& e) { return {e.address, e.size, e.stream, e.object, e.value}; }
};

// Op::PoolCreate and PoolDestroy: the pool handle.
struct PoolRecord {
  uint64_t pool = 0;
  void to_event(Event& e, Op op) const { e.op = op, e.object = pool; }
  static PoolRecord from_event(const Event& e) { return {e.object}; }
};

// Op::PoolReserved: a pool's reserved bytes as the driver reports them now, and its high watermark
// (RESERVED_MEM_HIGH; 0 when not read).
struct PoolReservedRecord {
  static constexpr Op kOp = Op::PoolReserved;
  uint64_t pool = 0;
  uint64_t reserved = 0;
  uint64_t reserved_high = 0;
  void to_event(Event& e) const { e.op = kOp, e.object = pool, e.value = reserved, e.size = reserved_high; }
  static PoolReservedRecord from_event(const Event& e) { return {e.object, e.value, e.size}; }
};

// Op::VmmMap: `size` bytes of physical `handle`, from `offset`, mapped at virtual address `va`.
struct VmmMapRecord {
  static constexpr Op kOp = Op::VmmMap;
  uint64_t va = 0;
  uint64_t size = 0;
  uint64_t handle = 0;
  uint64_t offset = 0;
  void to_event(Event& e) const { e.op = kOp, e.address = va, e.size = size, e.object = handle, e.value = offset; }
  static VmmMapRecord from_event(const Event& e) { return {e.address, e.size, e.object, e.value}; }
};

// Op::DeviceInfo: the device's total bytes, once per device before its first event.
struct DeviceInfoRecord {
  static constexpr Op kOp = Op::DeviceInfo;
  uint64_t total = 0;
  void to_event(Event& e) const { e.op = kOp, e.size = total; }
  static DeviceInfoRecord from_event(const Event& e) { return {e.size}; }
};

// Op::DriverMemory: cuMemGetInfo just after an allocation failed.
struct DriverMemoryRecord {
  static constexpr Op kOp = Op::DriverMemory;
  uint64_t total = 0;
  uint64_t free = 0;
  void to_event(Event& e) const { e.op = kOp, e.size = total, e.value = free; }
  static DriverMemoryRecord from_event(const Event& e) { return {e.size, e.value}; }
};

// Op::OomBundle (the collector wrote a bundle) and OomRecovered (an episode ended by a retry).
struct OomBundleRecord {
  static constexpr Op kOp = Op::OomBundle;
  uint64_t sequence = 0;
  uint64_t request_size = 0;
  void to_event(Event& e) const { e.op = kOp, e.address = sequence, e.size = request_size; }
  static OomBundleRecord from_event(const Event& e) { return {e.address, e.size}; }
};

// Op::Alert, from the collector (docs/alerts.md): an alert fired or cleared, with the device's
// figures at that moment and the threshold it crossed.
struct AlertRecord {
  static constexpr Op kOp = Op::Alert;
  AlertType type = AlertType::Warning;
  bool fired = false;
  uint64_t allocated = 0;
  uint64_t reserved = 0;
  uint64_t threshold = 0;
  void to_event(Event& e) const {
    e.op = kOp, e.value = detail::u64(type), e.result = fired ? 1 : 0, e.size = allocated, e.object = reserved,
    e.address = threshold;
  }
  static AlertRecord from_event(const Event& e) {
    return {static_cast<AlertType>(e.value), e.result == 1, e.size, e.object, e.address};
  }
  // The alert's type as an index (value), which a damaged file may put anywhere.
  static uint64_t type_index(const Event& e) { return e.value; }
};

// Op::Sample, from the collector's NVML sampler: the device's use and total, and this process's use
// (kUnknownProcessUse when NVML does not say).
struct SampleRecord {
  static constexpr Op kOp = Op::Sample;
  static constexpr uint64_t kUnknownProcessUse = UINT64_MAX;
  uint64_t device_used = 0;
  uint64_t device_total = 0;
  uint64_t process_used = kUnknownProcessUse;
  bool process_known() const { return process_used != kUnknownProcessUse; }
  void to_event(Event& e) const { e.op = kOp, e.size = device_used, e.object = device_total, e.value = process_used; }
  static SampleRecord from_event(const Event& e) { return {e.size, e.object, e.value}; }
};

// Op::Mark and RangePush: the name's id in attribution.jsonl.
struct NameRecord {
  uint32_t name_id = 0;
  void to_event(Event& e, Op op) const { e.op = op, e.address = name_id; }
  // 0 when the field holds no valid id (a damaged file).
  static NameRecord from_event(const Event& e) {
    return {e.address <= UINT32_MAX ? static_cast<uint32_t>(e.address) : 0u};
  }
};

// Op::TensorAlloc, SegmentAlloc and SegmentMap, from the framework bridge: `seeded` when the block
// existed before the bridge attached (its snapshot), `pool` the framework's memory pool
// (framework_pool_id(); 0 the default pool).
struct FrameworkBlockRecord {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t pool = 0;
  bool seeded = false;
  void to_event(Event& e, Op op) const {
    e.op = op, e.address = address, e.size = size, e.stream = stream, e.object = pool, e.value = seeded ? kSeeded : 0;
  }
  static FrameworkBlockRecord from_event(const Event& e) {
    return {e.address, e.size, e.stream, e.object, e.value == kSeeded};
  }
};

// Op::FrameworkOom: the framework raised OOM for `requested` bytes with `free` bytes free.
struct FrameworkOomRecord {
  static constexpr Op kOp = Op::FrameworkOom;
  uint64_t requested = 0;
  uint64_t free = 0;
  void to_event(Event& e) const { e.op = kOp, e.size = requested, e.value = free; }
  static FrameworkOomRecord from_event(const Event& e) { return {e.size, e.value}; }
};

// Op::FrameworkOomFigures: the framework's own figures at its OOM, before it raises.
struct FrameworkOomFiguresRecord {
  static constexpr Op kOp = Op::FrameworkOomFigures;
  uint64_t requested = 0;  // "Tried to allocate"
  uint64_t free = 0;       // the device's free bytes, as the framework asked the driver
  uint64_t capacity = 0;   // the device's total, or the memory fraction's limit
  uint64_t allocated = 0;  // the framework's allocated bytes (block sizes)
  uint64_t reserved = 0;   // the framework's reserved bytes
  void to_event(Event& e) const {
    e.op = kOp, e.size = requested, e.value = free, e.stream = capacity, e.object = allocated, e.address = reserved;
  }
  static FrameworkOomFiguresRecord from_event(const Event& e) {
    return {e.size, e.value, e.stream, e.object, e.address};
  }
};

// Op::FrameworkAttach: the bridge attached (or was refused, or detached), with the framework's
// version (framework_version()) and, when not attached, why.
struct FrameworkAttachRecord {
  static constexpr Op kOp = Op::FrameworkAttach;
  bool attached = false;
  uint64_t version = 0;
  FrameworkRefusal refusal = FrameworkRefusal::None;
  void to_event(Event& e) const {
    e.op = kOp, e.result = attached ? 1 : 0, e.value = version, e.object = detail::u64(refusal);
  }
  static FrameworkAttachRecord from_event(const Event& e) {
    return {e.result == 1, e.value, static_cast<FrameworkRefusal>(e.object)};
  }
};

// Op::TensorLabel, from the Python bootstrap: the tensor whose block starts at `address` on the
// event's device is, for as long as that block stays allocated, of `category`, named `name_id` in
// attribution.jsonl (a parameter's module path; 0 none). A label for an address with no live tensor
// says nothing.
struct TensorLabelRecord {
  static constexpr Op kOp = Op::TensorLabel;
  uint64_t address = 0;
  TensorCategory category = TensorCategory::Unknown;
  uint32_t name_id = 0;
  void to_event(Event& e) const { e.op = kOp, e.address = address, e.value = detail::u64(category), e.object = name_id; }
  static TensorLabelRecord from_event(const Event& e) {
    return {e.address, e.value < kTensorCategoryCount ? static_cast<TensorCategory>(e.value) : TensorCategory::Unknown,
            e.object <= UINT32_MAX ? static_cast<uint32_t>(e.object) : 0u};
  }
};

// Op::Phase, from the Python bootstrap: `phase` begins, in training step `step` (1 + the optimizer
// steps completed) and micro-batch `micro_batch` (the backward passes begun since the last
// optimizer step, counting this one; +1 in forward).
struct PhaseRecord {
  static constexpr Op kOp = Op::Phase;
  TrainingPhase phase = TrainingPhase::None;
  uint64_t step = 0;
  uint64_t micro_batch = 0;
  void to_event(Event& e) const { e.op = kOp, e.value = detail::u64(phase), e.size = step, e.object = micro_batch; }
  static PhaseRecord from_event(const Event& e) {
    return {e.value <= 3 ? static_cast<TrainingPhase>(e.value) : TrainingPhase::None, e.size, e.object};
  }
};

// Op::Cleanup, from the collector: the watchdog trimmed a device's pools after a critical alert.
struct CleanupRecord {
  static constexpr Op kOp = Op::Cleanup;
  uint64_t bytes_released = 0;
  uint64_t pools_trimmed = 0;
  void to_event(Event& e) const { e.op = kOp, e.size = bytes_released, e.value = pools_trimmed; }
  static CleanupRecord from_event(const Event& e) { return {e.size, e.value}; }
};

// Op::DeviceLimit (docs/device-limit.md), from the shim: the limit and what the driver holds for the
// process beyond its allocations (context, modules), as just measured. refused: the limit refused an
// allocation (result kOutOfMemory), with the process's bytes before it and what it would have added.
struct DeviceLimitRecord {
  static constexpr Op kOp = Op::DeviceLimit;
  uint64_t limit = 0;
  uint64_t context = 0;
  bool refused = false;
  uint64_t before = 0;  // refused only
  uint64_t bytes = 0;   // refused only
  void to_event(Event& e) const {
    e.op = kOp, e.value = limit, e.size = context, e.result = refused ? kOutOfMemory : 0, e.object = before,
    e.address = bytes;
  }
  static DeviceLimitRecord from_event(const Event& e) {
    return {e.value, e.size, e.result == kOutOfMemory, e.object, e.address};
  }
};

// Op::GraphAllocNode and GraphFreeNode (docs/accounting.md §Graph memory): a memory node of graph
// `graph`, added while `stream` captured (0: added with cuGraphAdd*) in capture `capture_id`.
struct GraphNodeRecord {
  uint64_t address = 0;  // the node's virtual address (alloc) or the address it frees at launch
  uint64_t size = 0;     // alloc nodes only
  uint64_t graph = 0;
  uint64_t stream = 0;
  uint64_t capture_id = 0;
  void to_event(Event& e, Op op) const {
    e.op = op, e.address = address, e.size = size, e.object = graph, e.stream = stream, e.value = capture_id;
  }
  static GraphNodeRecord from_event(const Event& e) { return {e.address, e.size, e.object, e.stream, e.value}; }
};

// Op::CaptureBegin: `stream` began capturing into `graph` (capture `capture_id`), in `mode`
// (CUstreamCaptureMode). Its stack is where the graph was captured.
struct CaptureBeginRecord {
  static constexpr Op kOp = Op::CaptureBegin;
  uint64_t stream = 0;
  uint64_t graph = 0;
  uint64_t capture_id = 0;
  uint64_t mode = 0;
  void to_event(Event& e) const {
    e.op = kOp, e.stream = stream, e.object = graph, e.value = capture_id, e.size = mode;
  }
  static CaptureBeginRecord from_event(const Event& e) { return {e.stream, e.object, e.value, e.size}; }
};

// Op::CaptureEnd: the capture ended with `graph` (0 when it was invalidated).
struct CaptureEndRecord {
  static constexpr Op kOp = Op::CaptureEnd;
  uint64_t stream = 0;
  uint64_t graph = 0;
  uint64_t capture_id = 0;
  void to_event(Event& e) const { e.op = kOp, e.stream = stream, e.object = graph, e.value = capture_id; }
  static CaptureEndRecord from_event(const Event& e) { return {e.stream, e.object, e.value}; }
};

// Op::GraphInstantiate: `graph` instantiated as `exec` with `flags`.
struct GraphInstantiateRecord {
  static constexpr Op kOp = Op::GraphInstantiate;
  uint64_t graph = 0;
  uint64_t exec = 0;
  uint64_t flags = 0;
  void to_event(Event& e) const { e.op = kOp, e.object = graph, e.address = exec, e.value = flags; }
  static GraphInstantiateRecord from_event(const Event& e) { return {e.object, e.address, e.value}; }
};

// Op::GraphLaunch: `exec` launched (or, api cuGraphUpload*, uploaded) on `stream`; `bytes` its
// allocation nodes' bytes (0: none or not known).
struct GraphLaunchRecord {
  static constexpr Op kOp = Op::GraphLaunch;
  uint64_t exec = 0;
  uint64_t stream = 0;
  uint64_t bytes = 0;
  void to_event(Event& e) const { e.op = kOp, e.address = exec, e.stream = stream, e.size = bytes; }
  static GraphLaunchRecord from_event(const Event& e) { return {e.address, e.stream, e.size}; }
};

// Op::GraphExecDestroy (exec) and GraphDestroy (graph).
struct GraphExecDestroyRecord {
  static constexpr Op kOp = Op::GraphExecDestroy;
  uint64_t exec = 0;
  void to_event(Event& e) const { e.op = kOp, e.address = exec; }
  static GraphExecDestroyRecord from_event(const Event& e) { return {e.address}; }
};
struct GraphDestroyRecord {
  static constexpr Op kOp = Op::GraphDestroy;
  uint64_t graph = 0;
  void to_event(Event& e) const { e.op = kOp, e.object = graph; }
  static GraphDestroyRecord from_event(const Event& e) { return {e.object}; }
};

// Op::GraphMemory: the device's graph memory pool as the driver reports it now.
struct GraphMemoryRecord {
  static constexpr Op kOp = Op::GraphMemory;
  uint64_t reserved = 0;
  uint64_t reserved_high = 0;
  uint64_t used = 0;
  uint64_t used_high = 0;
  void to_event(Event& e) const {
    e.op = kOp, e.size = reserved, e.value = reserved_high, e.object = used, e.address = used_high;
  }
  static GraphMemoryRecord from_event(const Event& e) { return {e.size, e.value, e.object, e.address}; }
};

// Op::GraphChild: `child`'s memory nodes moved into `parent` (a child graph node).
struct GraphChildRecord {
  static constexpr Op kOp = Op::GraphChild;
  uint64_t parent = 0;
  uint64_t child = 0;
  void to_event(Event& e) const { e.op = kOp, e.object = parent, e.address = child; }
  static GraphChildRecord from_event(const Event& e) { return {e.object, e.address}; }
};

}  // namespace gmp
