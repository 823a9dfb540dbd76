"""Shared by the PyTorch CUDA-graph workloads of scripts/gpu_check.py (torch_graphs.py,
torch_compile_graphs.py): the ground truth beyond torch_truth.record's counters.

  graph_memory()      the driver's graph memory attributes of device 0 (cuDeviceGetGraphMemAttribute
                      through libcuda, which PyTorch has already initialised: no cuInit here)
  private_pools(t)    torch.cuda.memory_snapshot()'s segments grouped by "segment_pool_id": reserved
                      (total_size), allocated (allocated_size) and requested (requested_size) bytes per
                      pool, keyed "a,b" as summary.json writes PyTorch's MempoolId pair; "0,0" is the
                      default pool, every other one a private pool (a graph's, or cudagraph trees')
  run(name, body)     torch_truth.record, then os._exit with its status

Why os._exit: the private pools' figures at exit must be those of the snapshot. A normal exit tears
the interpreter down first, and every tensor it frees (static inputs and outputs of the graphs, the
model) would move the pools' allocated bytes before the profiler writes its summary. os._exit ends the
process with nothing freed; the profiler still writes a complete summary (ended_by "exit_call",
docs/run-directory.md). Whatever the workload must keep alive goes into KEEP.
"""
import ctypes
import os
import sys

import torch_truth

KEEP = []  # alive until os._exit: nothing PyTorch holds is freed before the summary is written

# CUgraphMem_attribute: USED_MEM_CURRENT 0, USED_MEM_HIGH 1, RESERVED_MEM_CURRENT 2, RESERVED_MEM_HIGH 3.
GRAPH_MEM_ATTRS = (("used_current", 0), ("used_high", 1), ("reserved_current", 2), ("reserved_high", 3))


def graph_memory():
    cuda = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    rc = cuda.cuDeviceGet(ctypes.byref(dev), 0)
    if rc != 0:
        raise RuntimeError(f"cuDeviceGet: CUresult {rc}")
    out = {}
    for name, attr in GRAPH_MEM_ATTRS:
        v = ctypes.c_uint64()
        rc = cuda.cuDeviceGetGraphMemAttribute(dev, attr, ctypes.byref(v))
        if rc != 0:
            raise RuntimeError(f"cuDeviceGetGraphMemAttribute({attr}): CUresult {rc}")
        out[name] = v.value
    return out


def private_pools(torch):
    pools = {}
    for seg in torch.cuda.memory_snapshot():
        if seg.get("device", 0) != 0:
            continue
        a, b = tuple(seg.get("segment_pool_id", (0, 0)))
        p = pools.setdefault(f"{a},{b}", {"reserved": 0, "allocated": 0, "requested": 0, "segments": 0})
        p["reserved"] += seg["total_size"]
        p["allocated"] += seg["allocated_size"]
        p["requested"] += seg.get("requested_size", 0)
        p["segments"] += 1
    return pools


def finish(torch, out):
    """After torch_truth.record's counters: the device's size, the default pool's attributes with
    cudaMallocAsync (compare.py's torch rows), the graph memory attributes, the private pools with
    the native allocator (cudaMallocAsync has no snapshot). Nothing here allocates GPU memory."""
    out["total_memory"] = torch.cuda.get_device_properties(0).total_memory
    if out["backend"] == "cudaMallocAsync":
        import torch_alloc
        out["pool"] = torch_alloc.pool_attributes()
    else:
        out["private_pools"] = private_pools(torch)
    out["graph_mem"] = graph_memory()


def run(default_name, body):
    rc = torch_truth.record(default_name, body, finish)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
