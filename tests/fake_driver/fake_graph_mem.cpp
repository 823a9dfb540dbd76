// Executable graphs and graph memory: instantiate, upload, launch, exec destroy, the per-device
// graph memory pool (cuDeviceGet/SetGraphMemAttribute, cuDeviceGraphMemTrim), live graph
// allocations, and the hook fakecuda_graph_reserved_bytes.
//
// The model (what the real driver 580 showed on an H200), granularity G = 2 MiB:
//   capture / add node / instantiate: nothing changes.
//   upload, or the first launch of an exec (again after a trim):
//       need = Σ round_up(live graph allocation, G) on the device
//            + Σ round_up(allocation node size, G) of the exec on that device;
//       if need > reserved: reserved = need, the growth charged (OUT_OF_MEMORY if it does not
//       fit on every device concerned; then nothing changes).
//   used == reserved at all times (the driver reported them equal); the highs are maxima.
//   launch: an allocation node without a free node of the same graph becomes a live graph
//       allocation at its node address; a free node of an address not allocated in the graph
//       frees it (a live graph allocation, or a pool allocation).
//   trim: reserved = used = Σ round_up(live graph allocation, G); the rest uncharged.
#include "fake_capture.h"

#include <algorithm>
#include <map>
#include <set>

#include "fakecuda_hooks.h"

using namespace fakecuda;

namespace {

constexpr unsigned long long kFlagsWithFlags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                               CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                               CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
constexpr unsigned long long kFlagsWithParams = kFlagsWithFlags | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;

bool valid_exec_locked(CUgraphExec e) { return e != nullptr && state().graph_execs.count(e) != 0; }

bool has_memory(const CUgraphExec_st* e) { return !e->allocs.empty() || !e->outside_frees.empty(); }

// Live graph bytes on a device, each allocation rounded to G, without the addresses in `skip`.
size_t live_bytes_locked(int dev, const std::set<CUdeviceptr>& skip = {}) {
  size_t sum = 0;
  for (const auto& [va, a] : state().graph_live) {
    if (a.device == dev && skip.count(va) == 0) sum += round_up(a.size, kGraphGranularity);
  }
  return sum;
}

void set_graph_reserved_locked(int dev, size_t reserved) {
  Device& d = state().devices[static_cast<size_t>(dev)];
  if (reserved > d.graph_reserved) {
    charge_locked(dev, reserved - d.graph_reserved);  // checked by the caller
  } else {
    uncharge_locked(dev, d.graph_reserved - reserved);
  }
  d.graph_reserved = reserved;
  d.graph_reserved_high = std::max(d.graph_reserved_high, reserved);
  d.graph_used_high = std::max(d.graph_used_high, reserved);
}

// Reserves graph memory for an exec (upload / first launch); `freeing` are addresses an
// auto-free launch releases first.
CUresult reserve_for_exec_locked(CUgraphExec_st* e, const std::set<CUdeviceptr>& freeing) {
  if (e->memory_ready) return CUDA_SUCCESS;
  std::map<int, size_t> need;
  for (const ExecAlloc& a : e->allocs) need[a.device] += round_up(a.bytes, kGraphGranularity);
  for (auto& [dev, bytes] : need) bytes += live_bytes_locked(dev, freeing);
  for (const auto& [dev, bytes] : need) {
    const Device& d = state().devices[static_cast<size_t>(dev)];
    if (bytes > d.graph_reserved && bytes - d.graph_reserved > d.capacity - d.charged) {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  for (const auto& [dev, bytes] : need) {
    if (bytes > state().devices[static_cast<size_t>(dev)].graph_reserved) {
      set_graph_reserved_locked(dev, bytes);
    }
  }
  e->memory_ready = true;
  return CUDA_SUCCESS;
}

CUresult instantiate_locked(CUgraphExec* out, CUgraph g, unsigned long long flags,
                            unsigned long long allowed) {
  if (out == nullptr || g == nullptr || state().graphs.count(g) == 0 || g->owner != nullptr ||
      g->capture != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((flags & ~allowed) != 0 ||
      ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0 &&
       (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool memory = graph_has_memory_nodes(g);
  if (memory && g->exec != nullptr) return CUDA_ERROR_NOT_SUPPORTED;  // one exec at a time
  std::vector<const CUgraphNode_st*> nodes;
  graph_collect_nodes(g, &nodes);
  std::set<CUdeviceptr> allocated, freed;
  for (const CUgraphNode_st* n : nodes) {
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) allocated.insert(n->dptr);
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_FREE) freed.insert(n->dptr);
  }
  auto* e = new CUgraphExec_st();
  e->graph = g;
  e->flags = flags;
  for (const CUgraphNode_st* n : nodes) {
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      e->allocs.push_back(ExecAlloc{n->dptr, n->bytes, n->device, freed.count(n->dptr) != 0});
    }
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_FREE && allocated.count(n->dptr) == 0) {
      e->outside_frees.push_back(n->dptr);
    }
  }
  if (memory) g->exec = e;
  state().graph_execs.insert(e);
  *out = e;
  return CUDA_SUCCESS;
}

void exec_destroy_locked(CUgraphExec_st* e) {
  if (e->graph != nullptr && e->graph->exec == e) e->graph->exec = nullptr;
  state().graph_execs.erase(e);
  delete e;
}

// Launching or uploading into a capturing stream: a graph with memory nodes is refused (and the
// capture invalidated); any other launch becomes a child-graph node, an upload does nothing.
CUresult into_capture_locked(CUgraphExec_st* e, Capture* c, CUstream s, bool launch) {
  if (CUresult r = capture_check_active_locked(c); r != CUDA_SUCCESS) return r;
  if (has_memory(e)) {
    invalidate_capture_locked(c);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (launch) {
    capture_append_locked(s, graph_new_node_locked(c->graph, CU_GRAPH_NODE_TYPE_GRAPH,
                                                   s->capture_deps.data(),
                                                   s->capture_deps.size()));
  }
  return CUDA_SUCCESS;
}

CUresult upload(CUgraphExec e, CUstream s) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_exec_locked(e)) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  if (Capture* c = capture_of_locked(s)) return into_capture_locked(e, c, s, false);
  return reserve_for_exec_locked(e, {});
}

CUresult launch(CUgraphExec e, CUstream s) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_exec_locked(e)) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  if (Capture* c = capture_of_locked(s)) return into_capture_locked(e, c, s, true);
  State& st = state();
  const bool auto_free = (e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
  std::set<CUdeviceptr> freeing;  // this launch's own allocations still live from before
  for (const ExecAlloc& a : e->allocs) {
    if (a.freed_in_graph || st.graph_live.count(a.va) == 0) continue;
    if (!auto_free) return CUDA_ERROR_INVALID_VALUE;
    freeing.insert(a.va);
  }
  if (CUresult r = reserve_for_exec_locked(e, freeing); r != CUDA_SUCCESS) return r;
  for (CUdeviceptr va : freeing) st.graph_live.erase(va);
  for (CUdeviceptr p : e->outside_frees) {
    if (st.graph_live.erase(p) == 0) {
      auto b = st.blocks.find(static_cast<uintptr_t>(p));
      if (b != st.blocks.end() && b->second.kind == BlockKind::Pool) free_device_block_locked(p);
    }
  }
  for (const ExecAlloc& a : e->allocs) {
    if (!a.freed_in_graph) st.graph_live[a.va] = LiveGraphAlloc{a.device, a.bytes};
  }
  return CUDA_SUCCESS;
}

CUresult graph_mem_attr_dev(int dev, void* value) {
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fakecuda {

bool graph_free_live_locked(CUdeviceptr dptr) { return state().graph_live.erase(dptr) != 0; }

bool graph_live_range_locked(CUdeviceptr ptr, int* dev, CUdeviceptr* start, size_t* size) {
  auto it = state().graph_live.upper_bound(ptr);
  if (it == state().graph_live.begin()) return false;
  --it;
  if (ptr - it->first >= it->second.size) return false;
  *dev = it->second.device;
  *start = it->first;
  *size = it->second.size;
  return true;
}

}  // namespace fakecuda

extern "C" {

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  FAKE_REQUIRE_INIT(lock);
  return instantiate_locked(phGraphExec, hGraph, flags, kFlagsWithFlags);
}

// The CUDA 10.0 / 11.0 ABI (error node, log buffer); flags 0. cuda.h maps cuGraphInstantiate
// to cuGraphInstantiateWithFlags, but cuGetProcAddress("cuGraphInstantiate") hands out these.
// The error node and the log are written only when instantiation fails (a caller that mistakes
// this for the 3-argument ABI then still works on success, as it would on the real driver).
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                               char* logBuffer, size_t bufferSize) {
  FAKE_REQUIRE_INIT(lock);
  const CUresult r = instantiate_locked(phGraphExec, hGraph, 0, 0);
  if (r != CUDA_SUCCESS) {
    if (phErrorNode != nullptr) *phErrorNode = nullptr;
    if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  }
  return r;
}
CUresult fake_cuGraphInstantiate_v1(CUgraphExec* phGraphExec, CUgraph hGraph,
                                    CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize) {
  return cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

// CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads into params->hUploadStream (a failed upload
// destroys the new exec and returns the upload's error).
CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  {
    FAKE_REQUIRE_INIT(lock);
    if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
    params->hErrNode_out = nullptr;
    const CUresult r = instantiate_locked(phGraphExec, hGraph, params->flags, kFlagsWithParams);
    params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                           : CUDA_GRAPH_INSTANTIATE_ERROR;
    if (r != CUDA_SUCCESS || (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) == 0) return r;
  }
  const CUresult r = upload(*phGraphExec, params->hUploadStream);
  if (r != CUDA_SUCCESS) {
    Lock lock(state().mu);
    exec_destroy_locked(*phGraphExec);
    *phGraphExec = nullptr;
    params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  }
  return r;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return cuGraphInstantiateWithParams(phGraphExec, hGraph, params);
}

// Frees nothing and keeps the reservation: live allocations of the exec stay live.
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_exec_locked(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
  exec_destroy_locked(hGraphExec);
  return CUDA_SUCCESS;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  return upload(hGraphExec, hStream);
}
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return upload(hGraphExec, hStream);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream);
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  FAKE_REQUIRE_INIT(lock);
  if (CUresult r = graph_mem_attr_dev(device, value); r != CUDA_SUCCESS) return r;
  const Device& d = state().devices[static_cast<size_t>(device)];
  auto* out = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *out = d.graph_reserved; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *out = d.graph_used_high; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *out = d.graph_reserved_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Only the highs can be set, and only to 0, which resets them to the current value.
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  FAKE_REQUIRE_INIT(lock);
  if (CUresult r = graph_mem_attr_dev(device, value); r != CUDA_SUCCESS) return r;
  Device& d = state().devices[static_cast<size_t>(device)];
  if (*static_cast<const cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: d.graph_used_high = d.graph_reserved; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: d.graph_reserved_high = d.graph_reserved; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Keeps only what live graph allocations use. Executables with allocations on the device need
// a new reservation at their next launch or upload (the real driver returns the memory of
// graphs that are not running to the OS).
CUresult cuDeviceGraphMemTrim(CUdevice device) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  Device& d = state().devices[static_cast<size_t>(device)];
  const size_t keep = std::min(d.graph_reserved, live_bytes_locked(device));
  uncharge_locked(device, d.graph_reserved - keep);
  d.graph_reserved = keep;
  for (CUgraphExec_st* e : state().graph_execs) {
    for (const ExecAlloc& a : e->allocs) {
      if (a.device == device) e->memory_ready = false;
    }
  }
  return CUDA_SUCCESS;
}

// ---- test hook ----

size_t fakecuda_graph_reserved_bytes(int device) {
  Lock lock(state().mu);
  if (!state().initialized || !valid_device(device)) return 0;
  return state().devices[static_cast<size_t>(device)].graph_reserved;
}

}  // extern "C"
