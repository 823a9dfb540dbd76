// Ground truth for the CUDA-graph workloads (graph_capture.cu, graph_cublas.cu), beside truth.h.
//
// What a graph holds is read from the graph itself (its memory nodes and their parameters), not
// assumed: cuBLAS decides for itself whether its captured calls allocate. The driver's graph memory
// figures are read by the program at the end (cudaDeviceGetGraphMemAttribute); the profiler reports
// the same attributes (by_kind.graph.reserved / .used), and the highs must be equal.
//
// Per graph, the workload writes {"match": {...}, "expect": {...}} into the top-level "graphs" list:
// compare.py picks the summary's "graphs" entries whose fields equal "match" (origin, capture mode,
// bytes per launch: what tells this workload's graphs apart) and compares the "expect" fields of
// each exactly.
#pragma once
#include <cuda_runtime.h>
#include <set>
#include <string>
#include <vector>
#include "truth.h"

namespace graph_truth {

// The memory nodes of a graph: how many allocation and free nodes, the bytes the allocation nodes
// ask for per launch, and of those the bytes no free node of the graph releases (they outlive it).
struct MemNodes {
  uint64_t alloc_nodes = 0, free_nodes = 0, bytes = 0, outliving = 0;
};

inline cudaError_t mem_nodes(cudaGraph_t g, MemNodes* out) {
  size_t n = 0;
  cudaError_t e = cudaGraphGetNodes(g, nullptr, &n);
  if (e != cudaSuccess) return e;
  std::vector<cudaGraphNode_t> nodes(n);
  if (n && (e = cudaGraphGetNodes(g, nodes.data(), &n)) != cudaSuccess) return e;
  std::vector<std::pair<void*, uint64_t>> allocs;
  std::set<void*> freed;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if ((e = cudaGraphNodeGetType(node, &type)) != cudaSuccess) return e;
    if (type == cudaGraphNodeTypeMemAlloc) {
      cudaMemAllocNodeParams p{};
      if ((e = cudaGraphMemAllocNodeGetParams(node, &p)) != cudaSuccess) return e;
      allocs.push_back({p.dptr, p.bytesize});
    } else if (type == cudaGraphNodeTypeMemFree) {
      void* dptr = nullptr;
      if ((e = cudaGraphMemFreeNodeGetParams(node, &dptr)) != cudaSuccess) return e;
      freed.insert(dptr);
    }
  }
  *out = MemNodes{};
  out->alloc_nodes = allocs.size();
  out->free_nodes = freed.size();
  for (auto& a : allocs) {
    out->bytes += a.second;
    if (!freed.count(a.first)) out->outliving += a.second;
  }
  return cudaSuccess;
}

// What the program knows of one graph, for the "graphs" list.
struct Graph {
  const char* origin;        // "capture" | "explicit"
  const char* capture_mode;  // "global" | "thread_local" | "relaxed" | nullptr (explicit)
  MemNodes nodes;
  uint64_t launches = 0, uploads = 0, instantiations = 0, streams = 0;

  std::string json() const {
    auto num = [](uint64_t v) { return std::to_string(v); };
    std::string mode = capture_mode ? "\"" + std::string(capture_mode) + "\"" : "null";
    return "{\"match\": {\"origin\": \"" + std::string(origin) + "\", \"capture_mode\": " + mode +
           ", \"bytes_per_launch\": " + num(nodes.bytes) + "},\n   \"expect\": {\"alloc_nodes\": " +
           num(nodes.alloc_nodes) + ", \"free_nodes\": " + num(nodes.free_nodes) + ", \"outliving_bytes\": " +
           num(nodes.outliving) + ", \"launches\": " + num(launches) + ", \"uploads\": " + num(uploads) +
           ", \"instantiations\": " + num(instantiations) + ", \"streams\": " + num(streams) + "}}";
  }
};

inline std::string graphs_json(const std::vector<Graph>& graphs) {
  std::string s = "[";
  for (size_t i = 0; i < graphs.size(); ++i) s += (i ? ",\n  " : "\n  ") + graphs[i].json();
  return s + "]";
}

// The driver's graph memory attributes of device 0, as the "graph_mem" member of the ground truth.
// Returns false (and records an error) when one cannot be read.
inline bool graph_mem(truth::Writer& w, uint64_t out[4]) {
  const cudaGraphMemAttributeType attrs[4] = {cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrUsedMemHigh,
                                              cudaGraphMemAttrReservedMemCurrent, cudaGraphMemAttrReservedMemHigh};
  for (int i = 0; i < 4; ++i) {
    out[i] = 0;
    cudaError_t e = cudaDeviceGetGraphMemAttribute(0, attrs[i], &out[i]);
    if (e != cudaSuccess) {
      w.error("cudaDeviceGetGraphMemAttribute(%d): %s", (int)attrs[i], cudaGetErrorName(e));
      return false;
    }
  }
  w.top("graph_mem", "{\"used_current\": " + std::to_string(out[0]) + ", \"used_high\": " + std::to_string(out[1]) +
                         ", \"reserved_current\": " + std::to_string(out[2]) +
                         ", \"reserved_high\": " + std::to_string(out[3]) + "}");
  return true;
}

// FNV-1a over bytes: the checksum line, which must be the same with and without the profiler.
inline uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
constexpr uint64_t kFnvStart = 1469598103934665603ull;

}  // namespace graph_truth
