// Stream capture and CUDA graphs of the fake driver: handle bodies, the capture record and the
// helpers the other files call. Not installed. See README.md, "Stream capture and graphs".
#pragma once

#include <thread>
#include <vector>

#include "fake_state.h"

// A graph node. Only what the memory model needs is kept: memory nodes carry their allocation,
// a child-graph node created with ownership MOVE owns its child (whose memory nodes then count
// as the parent's); every other type is a plain node.
struct CUgraphNode_st {
  CUgraph_st* graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<CUgraphNode_st*> deps;
  CUdeviceptr dptr = 0;  // MEM_ALLOC: its address; MEM_FREE: the address freed
  size_t bytes = 0;      // MEM_ALLOC
  int device = 0;        // MEM_ALLOC
  CUmemPoolProps pool_props{};
  CUgraph_st* child = nullptr;  // GRAPH with ownership MOVE
};

struct CUgraph_st {
  std::vector<CUgraphNode_st*> nodes;  // owned
  CUgraphExec_st* exec = nullptr;      // the one executable of a graph with memory nodes
  CUgraphNode_st* owner = nullptr;     // set once moved into a parent as a child graph
  fakecuda::Capture* capture = nullptr;  // capture recording into this graph, if any
};

// An allocation node as instantiated (execs keep a copy: destroying the graph changes nothing).
struct ExecAlloc {
  CUdeviceptr va = 0;
  size_t bytes = 0;
  int device = 0;
  bool freed_in_graph = false;  // a free node of the same graph frees it
};

struct CUgraphExec_st {
  CUgraph_st* graph = nullptr;  // NULL once the graph is destroyed
  unsigned long long flags = 0;
  std::vector<ExecAlloc> allocs;
  std::vector<CUdeviceptr> outside_frees;  // free nodes of addresses not allocated in the graph
  bool memory_ready = false;  // graph memory reserved for it (upload / first launch)
};

namespace fakecuda {

struct Capture {
  cuuint64_t id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;  // the thread that began it
  CUstream origin = nullptr;
  CUgraph_st* graph = nullptr;
  bool user_graph = false;  // cuStreamBeginCaptureToGraph: the caller owns the graph
  bool invalidated = false;
  std::vector<CUstream> streams;  // origin first, then the streams that joined
};

// --- capture (fake_capture.cpp) ---
// The potentially-unsafe-call rule. Returns true when the calling thread may not make such a
// call now, after invalidating the captures that forbid it.
bool unsafe_call_prohibited_locked();
// The capture a stream handle takes part in (NULL for the special handles and idle streams).
Capture* capture_of_locked(CUstream s);
void invalidate_capture_locked(Capture* c);
// Adds `node` (already linked into the capture's graph) after the stream's dependencies, which
// then become that single node.
void capture_append_locked(CUstream s, CUgraphNode_st* node);
// Work enqueued into a capturing stream: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once the capture
// is invalidated, otherwise CUDA_SUCCESS (the caller then records its node).
CUresult capture_check_active_locked(const Capture* c);
// cuMemAllocAsync / cuMemAllocFromPoolAsync / cuMemFreeAsync on a capturing stream.
CUresult capture_alloc_locked(CUstream s, size_t bytes, int device, const CUmemPoolProps& props,
                              CUdeviceptr* dptr);
CUresult capture_free_locked(CUstream s, CUdeviceptr dptr);
// cuStreamDestroy of a stream in a capture: the origin discards the capture, a joined stream
// leaves it.
void capture_forget_stream_locked(CUstream s);

// --- graphs (fake_graph.cpp) ---
// Creates a node of `type` in g after deps (checked to be nodes of g by the callers).
CUgraphNode_st* graph_new_node_locked(CUgraph_st* g, CUgraphNodeType type,
                                      const CUgraphNode* deps, size_t n);
CUresult graph_check_deps_locked(CUgraph_st* g, const CUgraphNode* deps, size_t n);
// An allocation node: a fresh graph address for `bytes` on `device`, nothing charged.
CUgraphNode_st* graph_add_alloc_locked(CUgraph_st* g, const CUgraphNode* deps, size_t n,
                                       size_t bytes, int device, const CUmemPoolProps& props);
// A free node; CUDA_ERROR_INVALID_VALUE for an address that is neither a graph allocation's nor
// a pool allocation's, or that the graph frees already.
CUresult graph_add_free_locked(CUgraph_st* g, const CUgraphNode* deps, size_t n,
                               CUdeviceptr dptr, CUgraphNode_st** out);
CUgraph_st* graph_create_locked();
void graph_destroy_locked(CUgraph_st* g);
// Every node of g, moved child graphs included.
void graph_collect_nodes(const CUgraph_st* g, std::vector<const CUgraphNode_st*>* out);
bool graph_has_memory_nodes(const CUgraph_st* g);

// --- graph memory (fake_graph_mem.cpp) ---
// cuMemFree_v2 / cuMemFreeAsync of a live graph allocation: true when dptr was one (now freed).
bool graph_free_live_locked(CUdeviceptr dptr);
// A live graph allocation containing ptr, for cuPointerGetAttribute.
bool graph_live_range_locked(CUdeviceptr ptr, int* dev, CUdeviceptr* start, size_t* size);

}  // namespace fakecuda

// A potentially unsafe call (see README.md) starts with this, right after the init check.
#define FAKE_UNSAFE_CALL()                                 \
  do {                                                     \
    if (::fakecuda::unsafe_call_prohibited_locked())       \
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;        \
  } while (0)

// Exports that cuda.h does not declare under these names: the old ABIs its macros rename
// (cuStreamBeginCapture -> _v2, cuStreamGetCaptureInfo -> _v3, cuGraphInstantiate ->
// WithFlags, cuGraphAddNode -> _v2) and the per-thread-default-stream `_ptsz` variants. The set
// is what the real driver 580 exports and hands out (reference/proc_address_graph_driver580.txt).
extern "C" {
CUresult fake_cuStreamBeginCapture_v1(CUstream hStream) __asm__("cuStreamBeginCapture");
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                          const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData,
                                          size_t numDependencies, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus);
CUresult fake_cuStreamGetCaptureInfo_v1(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out) __asm__("cuStreamGetCaptureInfo");
CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                     cuuint64_t* id_out);
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                   cuuint64_t* id_out, CUgraph* graph_out,
                                   const CUgraphNode** dependencies_out,
                                   size_t* numDependencies_out);
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out,
                                        size_t* numDependencies_out);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out,
                                        const CUgraphEdgeData** edgeData_out,
                                        size_t* numDependencies_out);
CUresult fake_cuGraphInstantiate_v1(CUgraphExec* phGraphExec, CUgraph hGraph,
                                    CUgraphNode* phErrorNode, char* logBuffer,
                                    size_t bufferSize) __asm__("cuGraphInstantiate");
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                               char* logBuffer, size_t bufferSize);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
CUresult fake_cuGraphAddNode_v1(CUgraphNode* phGraphNode, CUgraph hGraph,
                                const CUgraphNode* dependencies, size_t numDependencies,
                                CUgraphNodeParams* nodeParams) __asm__("cuGraphAddNode");
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult cuStreamQuery_ptsz(CUstream hStream);
}
