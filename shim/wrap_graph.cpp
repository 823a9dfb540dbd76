// Stream capture and CUDA graphs (docs/accounting.md §Graph memory, docs/design.md §Stream capture).
// Begin and end of a capture are counted (capture.h) so allocation wrappers know when to ask a
// stream whether it captures; memory nodes, instantiations, launches and destructions are recorded
// for the collector, which decides what is live; the graph memory pool is read after the calls that
// can change it. Every wrapper forwards first and returns the driver's result untouched.
#include "capture.h"
#include "export.h"
#include "graph_memory.h"
#include "record.h"

using namespace gmp;
using namespace gmp::shim;

// The older ABIs, which cuda.h declares under other names (entry_points.h undefines its macros).
extern "C" {
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                            size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                               size_t bufferSize);
CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, CUgraphNodeParams* nodeParams);
}

namespace {

uint64_t handle(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Records a graph event; an out-of-memory result is an allocation failure like any other: the
// driver's free memory goes with it and the call waits for the OOM bundle before returning.
template <typename Fill>
void record_graph(int device, CUresult r, Fill&& fill) {
  const bool oom = r == CUDA_ERROR_OUT_OF_MEMORY;
  if (oom) record_driver_memory(device >= 0 ? device : current_device());
  session_record(device, [&](Event& e) {
    e.kind = Kind::Graph;
    e.result = static_cast<int16_t>(r);
    fill(e);
  });
  if (oom) session_wait_for_collector();
}

template <typename Real, typename... Args>
CUresult begin_capture(Api api, CUstreamCaptureMode mode, Real real, CUstream stream, Args... args) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // The graph's device, asked before the stream captures: once it does, asking would invalidate it.
  const int device = recording() ? stream_device(stream) : -1;
  capture::opening();
  const CUresult r = real(stream, args...);
  if (r != CUDA_SUCCESS) capture::closed();
  if (recording()) {
    ErrnoKeeper keep;
    const capture::Info info = r == CUDA_SUCCESS ? capture::of(stream) : capture::Info{};
    uint32_t stack = 0;
    prepare_allocation_event(&stack);  // the capture site; paused or not, the graph is the program's
    session_record(device, [&](Event& e) {
      CaptureBeginRecord{handle(stream), handle(info.graph), info.id, static_cast<uint64_t>(mode)}.to_event(e);
      e.api = api;
      e.kind = Kind::Graph;
      e.result = static_cast<int16_t>(r);
      e.stack_id = stack;
    });
  }
  return r;
}

template <typename Real>
CUresult end_capture(Api api, Real real, CUstream stream, CUgraph* graph) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const capture::Info info = capture::of(stream);  // before: the end forgets the capture
  const CUresult r = real(stream, graph);
  if (info.capturing) capture::closed();  // ended, invalidated or not
  if (recording() && info.capturing) {
    ErrnoKeeper keep;
    const uint64_t out = r == CUDA_SUCCESS && graph != nullptr ? handle(*graph) : 0;
    if (out != 0 && out != handle(info.graph)) graph_memory::note_child(*graph, info.graph);
    session_record(-1, [&](Event& e) {
      CaptureEndRecord{handle(stream), out, info.id}.to_event(e);
      e.api = api;
      e.kind = Kind::Graph;
      e.result = static_cast<int16_t>(r);
    });
  }
  return r;
}

void record_node(Op op, Api api, CUresult r, CUgraph graph, uint64_t address, uint64_t size, int device) {
  if (r == CUDA_SUCCESS && recording()) graph_memory::record_node(op, api, graph, 0, nullptr, address, size, device);
}

// What a generic node adds: a memory node, or a child graph whose memory nodes the parent now owns.
void record_node_params(Api api, CUresult r, CUgraph graph, const CUgraphNodeParams* p) {
  if (r != CUDA_SUCCESS || p == nullptr || !recording()) return;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      record_node(Op::GraphAllocNode, api, r, graph, p->alloc.dptr, p->alloc.bytesize, p->alloc.poolProps.location.id);
      return;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      record_node(Op::GraphFreeNode, api, r, graph, p->free.dptr, 0, -1);
      return;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) return;
      graph_memory::note_child(graph, p->graph.graph);
      session_record(-1, [&](Event& e) {
        GraphChildRecord{handle(graph), handle(p->graph.graph)}.to_event(e);
        e.api = api;
        e.kind = Kind::Graph;
      });
      return;
    default:
      return;
  }
}

void record_instantiate(Api api, CUresult r, CUgraphExec* exec, CUgraph graph, uint64_t flags) {
  const uint64_t x = r == CUDA_SUCCESS && exec != nullptr ? handle(*exec) : 0;
  if (x != 0) graph_memory::note_exec(*exec, graph);
  if (!recording()) return;
  ErrnoKeeper keep;
  record_graph(-1, r, [&](Event& e) {
    GraphInstantiateRecord{handle(graph), x, flags}.to_event(e);
    e.api = api;
  });
}

// Every instantiate ABI: forwarded, then the executable noted and recorded with its flags.
template <typename Real, typename... Args>
CUresult instantiate(Api api, Real real, uint64_t flags, CUgraphExec* exec, CUgraph graph, Args... args) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(exec, graph, args...);
  record_instantiate(api, r, exec, graph, flags);
  return r;
}

template <typename Real>
CUresult launch(Api api, Real real, CUgraphExec exec, CUstream stream) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(exec, stream);
  if (recording()) {
    ErrnoKeeper keep;
    uint64_t bytes = 0;
    const int device = graph_memory::exec_device(exec, &bytes);
    record_graph(device, r, [&](Event& e) {
      GraphLaunchRecord{handle(exec), handle(stream), bytes}.to_event(e);
      e.api = api;
    });
    // Launching or uploading an executable with memory nodes is where the driver maps its memory.
    if (device >= 0) graph_memory::read(device);
  }
  return r;
}

}  // namespace

GMP_EXPORT CUresult cuStreamBeginCapture(CUstream s) {
  return begin_capture(Api::cuStreamBeginCapture, CU_STREAM_CAPTURE_MODE_GLOBAL, GMP_REAL(cuStreamBeginCapture), s);
}
GMP_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
  return begin_capture(Api::cuStreamBeginCapture_ptsz, CU_STREAM_CAPTURE_MODE_GLOBAL,
                       GMP_REAL(cuStreamBeginCapture_ptsz), s);
}
GMP_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  return begin_capture(Api::cuStreamBeginCapture_v2, mode, GMP_REAL(cuStreamBeginCapture_v2), s, mode);
}
GMP_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
  return begin_capture(Api::cuStreamBeginCapture_v2_ptsz, mode, GMP_REAL(cuStreamBeginCapture_v2_ptsz), s, mode);
}
GMP_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode* deps,
                                                const CUgraphEdgeData* edges, size_t n, CUstreamCaptureMode mode) {
  return begin_capture(Api::cuStreamBeginCaptureToGraph, mode, GMP_REAL(cuStreamBeginCaptureToGraph), s, g, deps,
                       edges, n, mode);
}
GMP_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode* deps,
                                                     const CUgraphEdgeData* edges, size_t n,
                                                     CUstreamCaptureMode mode) {
  return begin_capture(Api::cuStreamBeginCaptureToGraph_ptsz, mode, GMP_REAL(cuStreamBeginCaptureToGraph_ptsz), s, g,
                       deps, edges, n, mode);
}
GMP_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph* g) {
  return end_capture(Api::cuStreamEndCapture, GMP_REAL(cuStreamEndCapture), s, g);
}
GMP_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) {
  return end_capture(Api::cuStreamEndCapture_ptsz, GMP_REAL(cuStreamEndCapture_ptsz), s, g);
}

GMP_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                           CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  auto real = GMP_REAL(cuGraphAddMemAllocNode);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(node, graph, deps, n, params);
  if (params != nullptr) {
    record_node(Op::GraphAllocNode, Api::cuGraphAddMemAllocNode, r, graph, params->dptr, params->bytesize,
                params->poolProps.location.id);
  }
  return r;
}
GMP_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                          CUdeviceptr dptr) {
  auto real = GMP_REAL(cuGraphAddMemFreeNode);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(node, graph, deps, n, dptr);
  record_node(Op::GraphFreeNode, Api::cuGraphAddMemFreeNode, r, graph, dptr, 0, -1);
  return r;
}
GMP_EXPORT CUresult cuGraphAddNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t n,
                                   CUgraphNodeParams* params) {
  auto real = GMP_REAL(cuGraphAddNode);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(node, graph, deps, n, params);
  record_node_params(Api::cuGraphAddNode, r, graph, params);
  return r;
}
GMP_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps,
                                      const CUgraphEdgeData* edges, size_t n, CUgraphNodeParams* params) {
  auto real = GMP_REAL(cuGraphAddNode_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(node, graph, deps, edges, n, params);
  record_node_params(Api::cuGraphAddNode_v2, r, graph, params);
  return r;
}

GMP_EXPORT CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, CUgraphNode* err, char* log, size_t len) {
  return instantiate(Api::cuGraphInstantiate, GMP_REAL(cuGraphInstantiate), 0, exec, graph, err, log, len);
}
GMP_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* err, char* log,
                                          size_t len) {
  return instantiate(Api::cuGraphInstantiate_v2, GMP_REAL(cuGraphInstantiate_v2), 0, exec, graph, err, log, len);
}
GMP_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  return instantiate(Api::cuGraphInstantiateWithFlags, GMP_REAL(cuGraphInstantiateWithFlags), flags, exec, graph,
                     flags);
}
GMP_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return instantiate(Api::cuGraphInstantiateWithParams, GMP_REAL(cuGraphInstantiateWithParams),
                     params != nullptr ? params->flags : 0, exec, graph, params);
}
GMP_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return instantiate(Api::cuGraphInstantiateWithParams_ptsz, GMP_REAL(cuGraphInstantiateWithParams_ptsz),
                     params != nullptr ? params->flags : 0, exec, graph, params);
}

GMP_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
  return launch(Api::cuGraphLaunch, GMP_REAL(cuGraphLaunch), exec, s);
}
GMP_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s) {
  return launch(Api::cuGraphLaunch_ptsz, GMP_REAL(cuGraphLaunch_ptsz), exec, s);
}
GMP_EXPORT CUresult cuGraphUpload(CUgraphExec exec, CUstream s) {
  return launch(Api::cuGraphUpload, GMP_REAL(cuGraphUpload), exec, s);
}
GMP_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream s) {
  return launch(Api::cuGraphUpload_ptsz, GMP_REAL(cuGraphUpload_ptsz), exec, s);
}

GMP_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  auto real = GMP_REAL(cuGraphExecDestroy);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const int device = graph_memory::exec_device(exec);
  const CUresult r = real(exec);
  if (r == CUDA_SUCCESS) graph_memory::forget_exec(exec);
  if (r == CUDA_SUCCESS && recording()) {
    ErrnoKeeper keep;
    session_record(-1, [&](Event& e) {
      GraphExecDestroyRecord{handle(exec)}.to_event(e);
      e.api = Api::cuGraphExecDestroy;
      e.kind = Kind::Graph;
    });
    if (device >= 0) graph_memory::read(device);
  }
  return r;
}
GMP_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
  auto real = GMP_REAL(cuGraphDestroy);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(graph);
  if (r == CUDA_SUCCESS) graph_memory::forget_graph(graph);
  if (r == CUDA_SUCCESS && recording()) {
    ErrnoKeeper keep;
    session_record(-1, [&](Event& e) {
      GraphDestroyRecord{handle(graph)}.to_event(e);
      e.api = Api::cuGraphDestroy;
      e.kind = Kind::Graph;
    });
  }
  return r;
}

GMP_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) {
  auto real = GMP_REAL(cuDeviceGraphMemTrim);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(device);
  if (r == CUDA_SUCCESS && recording()) {
    ErrnoKeeper keep;
    graph_memory::read(device);
  }
  return r;
}
GMP_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  auto real = GMP_REAL(cuDeviceSetGraphMemAttribute);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(device, attr, value);
  if (r == CUDA_SUCCESS && recording()) {
    ErrnoKeeper keep;
    graph_memory::read(device);
  }
  return r;
}
