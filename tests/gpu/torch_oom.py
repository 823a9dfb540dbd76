"""PyTorch out-of-memory workload for scripts/gpu_check.py (default caching allocator).

Fills part of device 0 with three known 2 GiB tensors, then asks for a tensor of the device's
total memory, which cannot fit, and catches torch.cuda.OutOfMemoryError. PyTorch's allocator
calls cudaMalloc (fails), frees its cached blocks, retries (fails again) and raises: two
driver-level out-of-memory failures with nothing succeeding in between, so gpumemprof must write
exactly ONE bundle (one episode) with failures == the OOM failures summary.json lists (2),
recovered false. The failing request reaches the driver rounded up to a multiple of 2 MiB, so
the bundle's request size must be in [requested, requested + 2 MiB].

Then everything is freed (tensors deleted, cache emptied), PyTorch's figures are written to
$GROUND_TRUTH (the same fields as torch_alloc.py, so compare.py's torch rows apply, plus "oom":
the expectations for the bundle) and the interpreter exits normally.
"""
import sys

import torch_truth

GiB = 1 << 30
MiB = 1 << 20
ROUND = 2 * MiB  # PyTorch rounds requests over 10 MiB up to a multiple of 2 MiB


def workload(torch, out):
    dev = torch.device("cuda", 0)
    total = torch.cuda.get_device_properties(0).total_memory
    out["total_memory"] = total
    kept = [torch.empty(2 * GiB, dtype=torch.uint8, device=dev) for _ in range(3)]
    torch.cuda.synchronize()
    live = sum(t.numel() * t.element_size() for t in kept)
    requested = total  # bytes: more than is free while 6 GiB are held
    at_oom = {"live_tensor_bytes": live, "requested": requested,
              "memory_allocated": torch.cuda.memory_allocated(0),
              "memory_reserved": torch.cuda.memory_reserved(0),
              "driver_free": torch.cuda.mem_get_info(0)[0]}
    raised = None
    try:
        big = torch.empty(requested, dtype=torch.uint8, device=dev)
        del big
    except torch.cuda.OutOfMemoryError as e:
        raised = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
    stats = torch.cuda.memory_stats(0)
    at_oom["num_ooms"] = stats.get("num_ooms", 0)
    at_oom["num_alloc_retries"] = stats.get("num_alloc_retries", 0)
    at_oom["error"] = raised
    out["at_oom"] = at_oom
    if raised is None:
        raise RuntimeError(f"torch.empty({requested}) on a device of {total} bytes did not raise "
                           "torch.cuda.OutOfMemoryError")
    if at_oom["num_ooms"] < 1:
        raise RuntimeError(f"memory_stats num_ooms is {at_oom['num_ooms']} after the OOM")
    del kept
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    out["oom"] = {"bundles": 1, "device": 0, "error": 2,
                  "request_size": requested, "request_size_max": requested + ROUND,
                  "live_bytes": live, "live_exact": False,
                  "failures": "summary", "recovered": False}
    # The native allocator's failing call is cudaMalloc -> cuMemAlloc_v2.
    if "expandable_segments:true" not in out["alloc_conf"].lower() and \
            torch.cuda.get_allocator_backend() == "native":
        out["oom"]["api"] = "cuMemAlloc_v2"


def main():
    return torch_truth.record("torch_oom", workload)


if __name__ == "__main__":
    sys.exit(main())
