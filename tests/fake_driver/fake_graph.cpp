// Graph building: cuGraphCreate / cuGraphDestroy, memory allocation and free nodes, child-graph,
// empty and generic nodes, node queries. Every call here is safe during a capture.
//
// An allocation node gets its address at once, from the graph VA range (kGraphVaBase, 2 MiB
// aligned, never reused); nothing is allocated or charged until a launch or upload
// (fake_graph_mem.cpp). Graphs with memory nodes follow the CUDA rules the profiler meets:
// they can be a child only by ownership MOVE (CLONE and cuGraphAddChildGraphNode refuse them
// with CUDA_ERROR_NOT_SUPPORTED), and an address is freed at most once per graph.
#include "fake_capture.h"

#include <algorithm>

using namespace fakecuda;

namespace fakecuda {

CUgraph_st* graph_create_locked() {
  auto* g = new CUgraph_st();
  state().graphs.insert(g);
  return g;
}

void graph_destroy_locked(CUgraph_st* g) {
  for (CUgraphNode_st* n : g->nodes) {
    if (n->child != nullptr) graph_destroy_locked(n->child);
    state().graph_nodes.erase(n);
    delete n;
  }
  if (g->exec != nullptr) g->exec->graph = nullptr;  // the executable lives on
  state().graphs.erase(g);
  delete g;
}

CUresult graph_check_deps_locked(CUgraph_st* g, const CUgraphNode* deps, size_t n) {
  if (n > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    if (state().graph_nodes.count(deps[i]) == 0 || deps[i]->graph != g) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

CUgraphNode_st* graph_new_node_locked(CUgraph_st* g, CUgraphNodeType type,
                                      const CUgraphNode* deps, size_t n) {
  auto* node = new CUgraphNode_st();
  node->graph = g;
  node->type = type;
  if (n > 0) node->deps.assign(deps, deps + n);
  g->nodes.push_back(node);
  state().graph_nodes.insert(node);
  return node;
}

void graph_collect_nodes(const CUgraph_st* g, std::vector<const CUgraphNode_st*>* out) {
  for (const CUgraphNode_st* n : g->nodes) {
    out->push_back(n);
    if (n->child != nullptr) graph_collect_nodes(n->child, out);
  }
}

bool graph_has_memory_nodes(const CUgraph_st* g) {
  std::vector<const CUgraphNode_st*> nodes;
  graph_collect_nodes(g, &nodes);
  return std::any_of(nodes.begin(), nodes.end(), [](const CUgraphNode_st* n) {
    return n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE;
  });
}

CUgraphNode_st* graph_add_alloc_locked(CUgraph_st* g, const CUgraphNode* deps, size_t n,
                                       size_t bytes, int device, const CUmemPoolProps& props) {
  State& s = state();
  const CUdeviceptr va = s.graph_va_next;
  s.graph_va_next += round_up(bytes, kGraphGranularity);
  s.graph_vas[va] = GraphVa{device, bytes};
  CUgraphNode_st* node = graph_new_node_locked(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC, deps, n);
  node->dptr = va;
  node->bytes = bytes;
  node->device = device;
  node->pool_props = props;
  return node;
}

CUresult graph_add_free_locked(CUgraph_st* g, const CUgraphNode* deps, size_t n,
                               CUdeviceptr dptr, CUgraphNode_st** out) {
  State& s = state();
  auto block = s.blocks.find(static_cast<uintptr_t>(dptr));
  const bool pool_block = block != s.blocks.end() && block->second.kind == BlockKind::Pool;
  if (s.graph_vas.count(dptr) == 0 && !pool_block) return CUDA_ERROR_INVALID_VALUE;
  std::vector<const CUgraphNode_st*> nodes;
  graph_collect_nodes(g, &nodes);
  for (const CUgraphNode_st* other : nodes) {
    if (other->type == CU_GRAPH_NODE_TYPE_MEM_FREE && other->dptr == dptr) {
      return CUDA_ERROR_INVALID_VALUE;  // freed twice in one graph
    }
  }
  CUgraphNode_st* node = graph_new_node_locked(g, CU_GRAPH_NODE_TYPE_MEM_FREE, deps, n);
  node->dptr = dptr;
  *out = node;
  return CUDA_SUCCESS;
}

}  // namespace fakecuda

namespace {

bool valid_graph_locked(CUgraph g) {
  return g != nullptr && state().graphs.count(g) != 0 && g->owner == nullptr;
}

bool valid_node_locked(CUgraphNode n) { return n != nullptr && state().graph_nodes.count(n) != 0; }

CUresult add_alloc(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                   const CUmemPoolProps& props, size_t bytes, CUdeviceptr* dptr) {
  if (out == nullptr || !valid_graph_locked(g)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = graph_check_deps_locked(g, deps, n); r != CUDA_SUCCESS) return r;
  if (bytes == 0 || props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!valid_device(props.location.id)) return CUDA_ERROR_INVALID_DEVICE;
  CUgraphNode_st* node = graph_add_alloc_locked(g, deps, n, bytes, props.location.id, props);
  *dptr = node->dptr;
  *out = node;
  return CUDA_SUCCESS;
}

CUresult add_free(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                  CUdeviceptr dptr) {
  if (out == nullptr || !valid_graph_locked(g)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = graph_check_deps_locked(g, deps, n); r != CUDA_SUCCESS) return r;
  CUgraphNode_st* node = nullptr;
  if (CUresult r = graph_add_free_locked(g, deps, n, dptr, &node); r != CUDA_SUCCESS) return r;
  *out = node;
  return CUDA_SUCCESS;
}

// Child graph node. CLONE (the default, and cuGraphAddChildGraphNode) copies a graph without
// memory nodes (the copy has nothing the fake needs, so none is kept); MOVE hands the child to
// the parent, whose memory nodes it then holds.
CUresult add_child(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, CUgraph child,
                   CUgraphChildGraphNodeOwnership ownership) {
  if (out == nullptr || !valid_graph_locked(g) || !valid_graph_locked(child) || child == g) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = graph_check_deps_locked(g, deps, n); r != CUDA_SUCCESS) return r;
  if (ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) {
    if (graph_has_memory_nodes(child)) return CUDA_ERROR_NOT_SUPPORTED;
    *out = graph_new_node_locked(g, CU_GRAPH_NODE_TYPE_GRAPH, deps, n);
    return CUDA_SUCCESS;
  }
  if (ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) return CUDA_ERROR_INVALID_VALUE;
  if (child->capture != nullptr || child->exec != nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode_st* node = graph_new_node_locked(g, CU_GRAPH_NODE_TYPE_GRAPH, deps, n);
  node->child = child;
  child->owner = node;
  *out = node;
  return CUDA_SUCCESS;
}

CUresult add_node(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                  CUgraphNodeParams* p) {
  FAKE_REQUIRE_INIT(lock);
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return add_alloc(out, g, deps, n, p->alloc.poolProps, p->alloc.bytesize, &p->alloc.dptr);
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return add_free(out, g, deps, n, p->free.dptr);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return add_child(out, g, deps, n, p->graph.graph, p->graph.ownership);
    default: break;
  }
  if (static_cast<int>(p->type) < 0 || p->type > CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (out == nullptr || !valid_graph_locked(g)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = graph_check_deps_locked(g, deps, n); r != CUDA_SUCCESS) return r;
  *out = graph_new_node_locked(g, p->type, deps, n);  // a plain node: its work is not modelled
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  FAKE_REQUIRE_INIT(lock);
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = graph_create_locked();
  return CUDA_SUCCESS;
}

// A graph being captured into, or owned by a parent, cannot be destroyed by the caller. An
// executable instantiated from it stays valid.
CUresult cuGraphDestroy(CUgraph hGraph) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_graph_locked(hGraph) || hGraph->capture != nullptr) return CUDA_ERROR_INVALID_VALUE;
  graph_destroy_locked(hGraph);
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                const CUgraphNode* dependencies, size_t numDependencies,
                                CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  FAKE_REQUIRE_INIT(lock);
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return add_alloc(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->poolProps,
                   nodeParams->bytesize, &nodeParams->dptr);
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                               const CUgraphNode* dependencies, size_t numDependencies,
                               CUdeviceptr dptr) {
  FAKE_REQUIRE_INIT(lock);
  return add_free(phGraphNode, hGraph, dependencies, numDependencies, dptr);
}

CUresult cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                  const CUgraphNode* dependencies, size_t numDependencies,
                                  CUgraph childGraph) {
  FAKE_REQUIRE_INIT(lock);
  return add_child(phGraphNode, hGraph, dependencies, numDependencies, childGraph,
                   CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE);
}

CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                             const CUgraphNode* dependencies, size_t numDependencies) {
  FAKE_REQUIRE_INIT(lock);
  if (phGraphNode == nullptr || !valid_graph_locked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = graph_check_deps_locked(hGraph, dependencies, numDependencies);
      r != CUDA_SUCCESS) {
    return r;
  }
  *phGraphNode = graph_new_node_locked(hGraph, CU_GRAPH_NODE_TYPE_EMPTY, dependencies,
                                       numDependencies);
  return CUDA_SUCCESS;
}

// CUDA 12.2 ABI (no edge data); cuda.h names the 12.3 one cuGraphAddNode_v2.
CUresult fake_cuGraphAddNode_v1(CUgraphNode* phGraphNode, CUgraph hGraph,
                                const CUgraphNode* dependencies, size_t numDependencies,
                                CUgraphNodeParams* nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

// Edge data is accepted and not kept.
CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                           const CUgraphNode* dependencies, const CUgraphEdgeData*,
                           size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_node_locked(hNode) || type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *type = hNode->type;
  return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_node_locked(hNode) || params_out == nullptr ||
      hNode->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *params_out = CUDA_MEM_ALLOC_NODE_PARAMS{};
  params_out->poolProps = hNode->pool_props;
  params_out->bytesize = hNode->bytes;
  params_out->dptr = hNode->dptr;
  return CUDA_SUCCESS;
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_node_locked(hNode) || dptr_out == nullptr ||
      hNode->type != CU_GRAPH_NODE_TYPE_MEM_FREE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *dptr_out = hNode->dptr;
  return CUDA_SUCCESS;
}

}  // extern "C"
