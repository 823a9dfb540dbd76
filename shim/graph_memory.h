// The graph memory pool as the shim sees it: which graphs have memory nodes (so only their launches
// pay for reading the pool), and the pool's figures read from the driver where they can change
// (upload, launch, trim, synchronisation, exit), recorded as GraphMemory events when they changed.
// cuDeviceGetGraphMemAttribute is safe during any capture (measured), 16 ns on an H200.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "event.h"

namespace gmp::shim::graph_memory {

// A memory node added to `graph` (GraphAllocNode or GraphFreeNode): noted as above and recorded,
// with the call stack of an allocation node. `stream` and `capture_id` are the capture's (0 for a
// node added with cuGraphAdd*).
void record_node(Op op, Api api, CUgraph graph, uint64_t capture_id, CUstream stream, uint64_t address,
                 uint64_t size, int device);

// A graph with an allocation node of `bytes` (0: a free node), on `device` (-1: not known).
void note_graph(CUgraph graph, int device, uint64_t bytes);
// `exec` was instantiated from `graph`; remembered when the graph has memory nodes.
void note_exec(CUgraphExec exec, CUgraph graph);
// Memory nodes of `child` now belong to `parent` (a child graph node that took ownership).
void note_child(CUgraph parent, CUgraph child);
// The device of an executable with memory nodes, and what its allocation nodes ask for in all (what
// a launch that fails for want of memory asked); -1 and 0 for any other.
int exec_device(CUgraphExec exec, uint64_t* bytes = nullptr);
void forget_exec(CUgraphExec exec);
void forget_graph(CUgraph graph);

// Reads the device's graph memory pool and records a GraphMemory event if it changed.
void read(int device);
// read() of every device that has had graph memory.
void refresh_all();

// A forked child inherits handles that mean nothing to it.
void reset();

}  // namespace gmp::shim::graph_memory
