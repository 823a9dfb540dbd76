#include "event.h"

#include <array>

namespace gmp {

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::Linear: return "linear";
    case Kind::Pool: return "pool";
    case Kind::Vmm: return "vmm";
    case Kind::Array: return "array";
    case Kind::Managed: return "managed";
    case Kind::HostPinned: return "host_pinned";
    case Kind::Graph: return "graph";
    case Kind::Runtime: return "runtime";
    case Kind::None: break;
  }
  return "none";
}

std::string_view op_name(Op o) {
  switch (o) {
    case Op::Alloc: return "alloc";
    case Op::Free: return "free";
    case Op::ReleaseFailed: return "release_failed";
    case Op::PoolCreate: return "pool_create";
    case Op::PoolDestroy: return "pool_destroy";
    case Op::PoolReserved: return "pool_reserved";
    case Op::VmmCreate: return "vmm_create";
    case Op::VmmRelease: return "vmm_release";
    case Op::VmmMap: return "vmm_map";
    case Op::VmmUnmap: return "vmm_unmap";
    case Op::DeviceInfo: return "device_info";
    case Op::DriverMemory: return "driver_memory";
    case Op::OomBundle: return "oom_bundle";
    case Op::OomRecovered: return "oom_recovered";
    case Op::Alert: return "alert";
    case Op::Sample: return "sample";
    case Op::Mark: return "mark";
    case Op::RangePush: return "range_push";
    case Op::RangePop: return "range_pop";
    case Op::Pause: return "pause";
    case Op::Resume: return "resume";
    case Op::TensorAlloc: return "tensor_alloc";
    case Op::TensorFreeRequested: return "tensor_free_requested";
    case Op::TensorFreeCompleted: return "tensor_free_completed";
    case Op::SegmentAlloc: return "segment_alloc";
    case Op::SegmentFree: return "segment_free";
    case Op::SegmentMap: return "segment_map";
    case Op::SegmentUnmap: return "segment_unmap";
    case Op::FrameworkOom: return "framework_oom";
    case Op::FrameworkOomFigures: return "framework_oom_figures";
    case Op::FrameworkAttach: return "framework_attach";
    case Op::Cleanup: return "cleanup";
    case Op::DeviceLimit: return "device_limit";
    case Op::GraphAllocNode: return "graph_alloc_node";
    case Op::GraphFreeNode: return "graph_free_node";
    case Op::CaptureBegin: return "capture_begin";
    case Op::CaptureEnd: return "capture_end";
    case Op::GraphInstantiate: return "graph_instantiate";
    case Op::GraphLaunch: return "graph_launch";
    case Op::GraphExecDestroy: return "graph_exec_destroy";
    case Op::GraphDestroy: return "graph_destroy";
    case Op::GraphMemory: return "graph_memory";
    case Op::GraphChild: return "graph_child";
    case Op::TensorLabel: return "tensor_label";
    case Op::Phase: return "phase";
    case Op::None: break;
  }
  return "none";
}

std::string_view api_name(Api a) {
  static constexpr std::array<std::string_view, static_cast<size_t>(Api::Count_)> names = {
      "none",
      "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged",
      "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz",
      "cuMemFreeAsync", "cuMemFreeAsync_ptsz", "cuMemPoolCreate", "cuMemPoolDestroy", "cuMemPoolTrimTo",
      "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",
      "cuArrayCreate_v2", "cuArray3DCreate_v2", "cuArrayDestroy", "cuMipmappedArrayCreate",
      "cuMipmappedArrayDestroy", "cuMemHostAlloc", "cuMemAllocHost_v2", "cuMemFreeHost",
      "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize", "cuEventSynchronize",
      "cuDeviceSetMemPool", "collector", "gpumemprof_api", "nvtx", "torch_caching_allocator",
      "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",
      "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz", "cuStreamEndCapture",
      "cuStreamEndCapture_ptsz", "cuGraphAddMemAllocNode", "cuGraphAddMemFreeNode", "cuGraphAddNode",
      "cuGraphAddNode_v2", "cuGraphInstantiate", "cuGraphInstantiate_v2", "cuGraphInstantiateWithFlags",
      "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz",
      "cuGraphUpload", "cuGraphUpload_ptsz", "cuGraphExecDestroy", "cuGraphDestroy", "cuDeviceGraphMemTrim",
      "cuDeviceSetGraphMemAttribute",
#define GMP_API_NAME(name) #name,
      GMP_HIP_APIS(GMP_API_NAME)
#undef GMP_API_NAME
  };
  auto i = static_cast<size_t>(a);
  return i < names.size() ? names[i] : "unknown";
}

std::string_view framework_refusal_name(FrameworkRefusal r) {
  switch (r) {
    case FrameworkRefusal::None: return "none";
    case FrameworkRefusal::UnknownVersion: return "unknown_version";
    case FrameworkRefusal::OtherBackend: return "other_backend";
    case FrameworkRefusal::NoAllocator: return "no_allocator";
    case FrameworkRefusal::AttachFailed: return "attach_failed";
    case FrameworkRefusal::SelfCheckFailed: return "self_check_failed";
    case FrameworkRefusal::Disabled: return "disabled";
  }
  return "unknown";
}

std::string_view tensor_category_name(TensorCategory c) {
  switch (c) {
    case TensorCategory::Parameters: return "parameters";
    case TensorCategory::Gradients: return "gradients";
    case TensorCategory::OptimizerState: return "optimizer_state";
    case TensorCategory::Activations: return "activations";
    case TensorCategory::Temporaries: return "temporaries";
    case TensorCategory::KvCache: return "kv_cache";
    case TensorCategory::Other: return "other";
    case TensorCategory::Unknown: break;
  }
  return "unknown";
}

std::string_view training_phase_name(TrainingPhase p) {
  switch (p) {
    case TrainingPhase::Forward: return "forward";
    case TrainingPhase::Backward: return "backward";
    case TrainingPhase::Optimizer: return "optimizer";
    case TrainingPhase::None: break;
  }
  return "none";
}

std::string framework_version_text(uint64_t packed) {
  return std::to_string((packed >> 16) & 0xffff) + "." + std::to_string((packed >> 8) & 0xff) + "." +
         std::to_string(packed & 0xff);
}

std::string framework_pool_text(uint64_t packed) {
  return std::to_string(packed >> 32) + "," + std::to_string(packed & 0xffffffffull);
}

std::string alert_type_name(AlertType t) {
  switch (t) {
    case AlertType::Warning: return "warning";
    case AlertType::Critical: return "critical";
    case AlertType::Fragmentation: return "fragmentation";
    case AlertType::Growth: return "growth";
  }
  return "unknown";
}

}  // namespace gmp
