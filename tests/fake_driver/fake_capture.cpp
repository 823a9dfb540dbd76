// Stream capture: begin / end / status queries, the per-thread capture-interaction mode, the
// "potentially unsafe API call" rule, and the stream work that a capture records (memsets,
// stream-ordered allocations and frees, event record / wait, which joins streams).
//
// The rule (as the real driver 580 was measured to apply it): a potentially unsafe call is
// prohibited when
//   (a) the calling thread's mode is GLOBAL and a capture begun in GLOBAL mode is active on any
//       thread, or
//   (b) the calling thread's mode is not RELAXED and the calling thread itself has an active
//       capture begun in GLOBAL or THREAD_LOCAL mode.
// A prohibited call returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, does nothing else, and
// invalidates the captures that forbade it. Invalidated captures forbid nothing more.
#include "fake_capture.h"

#include <algorithm>

using namespace fakecuda;

namespace {

thread_local CUstreamCaptureMode tls_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool valid_mode(int mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

bool special_stream(CUstream s) {
  return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

// Ends a capture: every stream leaves it, the record goes. The graph stays (the caller decides).
void finish_capture_locked(Capture* c) {
  for (CUstream s : c->streams) {
    s->capture = nullptr;
    s->capture_deps.clear();
    s->capture_edges.clear();
  }
  if (c->graph != nullptr) c->graph->capture = nullptr;
  state().captures.erase(c->id);
  delete c;
}

void set_deps(CUstream s, std::vector<CUgraphNode> deps) {
  s->capture_deps = std::move(deps);
  s->capture_edges.assign(s->capture_deps.size(), CUgraphEdgeData{});
}

CUresult begin_capture(CUstream s, CUstreamCaptureMode mode, CUgraph user_graph,
                       const CUgraphNode* deps, size_t n) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_mode(mode)) return CUDA_ERROR_INVALID_VALUE;
  // The legacy stream cannot be captured (real driver). The per-thread default stream could be
  // on the real driver; the fake does not model capturing it.
  if (special_stream(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (state().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  CUgraph_st* g = user_graph;
  if (g != nullptr) {
    if (state().graphs.count(g) == 0 || g->owner != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (g->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    if (CUresult r = graph_check_deps_locked(g, deps, n); r != CUDA_SUCCESS) return r;
  } else {
    g = graph_create_locked();
  }
  auto* c = new Capture();
  c->id = state().next_capture_id++;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->graph = g;
  c->user_graph = user_graph != nullptr;
  c->streams.push_back(s);
  g->capture = c;
  state().captures[c->id] = c;
  s->capture = c;
  set_deps(s, user_graph != nullptr && n > 0 ? std::vector<CUgraphNode>(deps, deps + n)
                                             : std::vector<CUgraphNode>{});
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream s, CUgraph* phGraph) {
  FAKE_REQUIRE_INIT(lock);
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!special_stream(s) && state().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  Capture* c = capture_of_locked(s);
  if (c == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (c->origin != s) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id()) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  CUgraph_st* g = c->graph;
  const bool invalidated = c->invalidated;
  const bool user_graph = c->user_graph;
  finish_capture_locked(c);
  if (invalidated) {
    if (!user_graph) graph_destroy_locked(g);
    *phGraph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *phGraph = g;
  return CUDA_SUCCESS;
}

CUstreamCaptureStatus status_of(const Capture* c) {
  if (c == nullptr) return CU_STREAM_CAPTURE_STATUS_NONE;
  return c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// Safe in every mode. The special handles never capture here, so they report NONE.
CUresult is_capturing(CUstream s, CUstreamCaptureStatus* status) {
  FAKE_REQUIRE_INIT(lock);
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!special_stream(s) && state().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *status = status_of(capture_of_locked(s));
  return CUDA_SUCCESS;
}

// All three ABIs. Not capturing: status NONE, *id untouched, the other outputs NULL / 0.
CUresult get_capture_info(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id,
                          CUgraph* graph, const CUgraphNode** deps,
                          const CUgraphEdgeData** edges, size_t* n) {
  FAKE_REQUIRE_INIT(lock);
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!special_stream(s) && state().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  const Capture* c = capture_of_locked(s);
  *status = status_of(c);
  const bool active = c != nullptr && !c->invalidated;
  if (c != nullptr && id != nullptr) *id = c->id;
  if (graph != nullptr) *graph = active ? c->graph : nullptr;
  if (deps != nullptr) {
    *deps = active && !s->capture_deps.empty() ? s->capture_deps.data() : nullptr;
  }
  if (edges != nullptr) {
    *edges = active && !s->capture_edges.empty() ? s->capture_edges.data() : nullptr;
  }
  if (n != nullptr) *n = active ? s->capture_deps.size() : 0;
  return CUDA_SUCCESS;
}

// Async memsets do no work here; on a capturing stream they become a MEMSET node.
CUresult memset_async(CUstream s) {
  FAKE_REQUIRE_INIT(lock);
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  Capture* c = capture_of_locked(s);
  if (c == nullptr) return CUDA_SUCCESS;
  if (CUresult r = capture_check_active_locked(c); r != CUDA_SUCCESS) return r;
  capture_append_locked(s, graph_new_node_locked(c->graph, CU_GRAPH_NODE_TYPE_MEMSET,
                                                 s->capture_deps.data(), s->capture_deps.size()));
  return CUDA_SUCCESS;
}

// A stream waiting on an event recorded in a capture joins that capture (same id and graph),
// its dependencies the event's; it leaves at the capture's end. A capturing stream waiting on
// an event of its own capture adds the event's dependencies; on one of another capture or one
// not recorded in a capture, the capture is invalidated (MERGE / ISOLATION).
CUresult wait_event(CUstream s, CUevent ev, unsigned int flags) {
  FAKE_REQUIRE_INIT(lock);
  if (state().events.count(ev) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 && flags != CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  auto it = state().captures.find(ev->capture_id);
  Capture* from = (ev->capture_id != 0 && it != state().captures.end()) ? it->second : nullptr;
  Capture* c = capture_of_locked(s);
  if (c == nullptr) {
    if (from == nullptr) return CUDA_SUCCESS;  // ordinary wait: nothing runs asynchronously
    if (special_stream(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (CUresult r = capture_check_active_locked(from); r != CUDA_SUCCESS) return r;
    s->capture = from;
    from->streams.push_back(s);
    set_deps(s, ev->capture_deps);
    return CUDA_SUCCESS;
  }
  if (CUresult r = capture_check_active_locked(c); r != CUDA_SUCCESS) return r;
  if (from == c) {
    std::vector<CUgraphNode> deps = s->capture_deps;
    for (CUgraphNode d : ev->capture_deps) {
      if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
    }
    set_deps(s, std::move(deps));
    return CUDA_SUCCESS;
  }
  invalidate_capture_locked(c);
  if (from != nullptr) {
    invalidate_capture_locked(from);
    return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  }
  return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
}

}  // namespace

namespace fakecuda {

bool unsafe_call_prohibited_locked() {
  const std::thread::id me = std::this_thread::get_id();
  bool prohibited = false;
  for (auto& [id, c] : state().captures) {
    if (c->invalidated) continue;
    const bool global_rule =
        tls_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    const bool own_rule = tls_mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread == me &&
                          c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    if (global_rule || own_rule) {
      c->invalidated = true;
      prohibited = true;
    }
  }
  return prohibited;
}

Capture* capture_of_locked(CUstream s) {
  if (special_stream(s) || state().streams.count(s) == 0) return nullptr;
  return s->capture;
}

void invalidate_capture_locked(Capture* c) { c->invalidated = true; }

CUresult capture_check_active_locked(const Capture* c) {
  return c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

void capture_append_locked(CUstream s, CUgraphNode_st* node) { set_deps(s, {node}); }

CUresult capture_alloc_locked(CUstream s, size_t bytes, int device, const CUmemPoolProps& props,
                              CUdeviceptr* dptr) {
  Capture* c = s->capture;
  if (CUresult r = capture_check_active_locked(c); r != CUDA_SUCCESS) return r;
  CUgraphNode_st* node = graph_add_alloc_locked(c->graph, s->capture_deps.data(),
                                                s->capture_deps.size(), bytes, device, props);
  capture_append_locked(s, node);
  *dptr = node->dptr;
  return CUDA_SUCCESS;
}

CUresult capture_free_locked(CUstream s, CUdeviceptr dptr) {
  Capture* c = s->capture;
  if (CUresult r = capture_check_active_locked(c); r != CUDA_SUCCESS) return r;
  if (dptr == 0) return CUDA_SUCCESS;  // a no-op, as outside a capture
  CUgraphNode_st* node = nullptr;
  if (CUresult r = graph_add_free_locked(c->graph, s->capture_deps.data(),
                                         s->capture_deps.size(), dptr, &node);
      r != CUDA_SUCCESS) {
    return r;
  }
  capture_append_locked(s, node);
  return CUDA_SUCCESS;
}

void capture_forget_stream_locked(CUstream s) {
  Capture* c = s->capture;
  if (c == nullptr) return;
  if (c->origin == s) {
    CUgraph_st* g = c->graph;
    const bool user_graph = c->user_graph;
    finish_capture_locked(c);
    if (!user_graph) graph_destroy_locked(g);
    return;
  }
  c->streams.erase(std::find(c->streams.begin(), c->streams.end(), s));
  s->capture = nullptr;
  s->capture_deps.clear();
  s->capture_edges.clear();
}

}  // namespace fakecuda

extern "C" {

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  FAKE_REQUIRE_INIT(lock);
  if (mode == nullptr || !valid_mode(*mode)) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, tls_mode);
  return CUDA_SUCCESS;
}

// The CUDA 10.0 ABI: no mode argument, GLOBAL.
CUresult fake_cuStreamBeginCapture_v1(CUstream hStream) {
  return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr, nullptr, 0);
}
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr, nullptr, 0);
}
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return begin_capture(hStream, mode, nullptr, nullptr, 0);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return begin_capture(hStream, mode, nullptr, nullptr, 0);
}

// Edge data is accepted and not kept (every edge reads back as a default edge).
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode* dependencies, const CUgraphEdgeData*,
                                     size_t numDependencies, CUstreamCaptureMode mode) {
  if (hGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(hStream, mode, hGraph, dependencies, numDependencies);
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                          const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData,
                                          size_t numDependencies, CUstreamCaptureMode mode) {
  return cuStreamBeginCaptureToGraph(hStream, hGraph, dependencies, dependencyData,
                                     numDependencies, mode);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return end_capture(hStream, phGraph);
}
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return end_capture(hStream, phGraph);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return is_capturing(hStream, captureStatus);
}
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return is_capturing(hStream, captureStatus);
}

CUresult fake_cuStreamGetCaptureInfo_v1(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out) {
  return get_capture_info(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr);
}
CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                     cuuint64_t* id_out) {
  return get_capture_info(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr);
}
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                   cuuint64_t* id_out, CUgraph* graph_out,
                                   const CUgraphNode** dependencies_out,
                                   size_t* numDependencies_out) {
  return get_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                          numDependencies_out);
}
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out,
                                        size_t* numDependencies_out) {
  return get_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                          numDependencies_out);
}
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                   cuuint64_t* id_out, CUgraph* graph_out,
                                   const CUgraphNode** dependencies_out,
                                   const CUgraphEdgeData** edgeData_out,
                                   size_t* numDependencies_out) {
  return get_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                          edgeData_out, numDependencies_out);
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out,
                                        const CUgraphEdgeData** edgeData_out,
                                        size_t* numDependencies_out) {
  return get_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                          edgeData_out, numDependencies_out);
}

CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream hStream) {
  return memset_async(hStream);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream hStream) {
  return memset_async(hStream);
}
CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream hStream) {
  return memset_async(hStream);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr, unsigned int, size_t, CUstream hStream) {
  return memset_async(hStream);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return wait_event(hStream, hEvent, Flags);
}
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return wait_event(hStream, hEvent, Flags);
}

}  // extern "C"
