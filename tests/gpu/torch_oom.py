"""PyTorch out-of-memory workload for scripts/gpu-check.sh (default caching allocator).

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
import json
import os
import sys
import traceback

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
    out = {"workload": os.environ.get("GPU_CHECK_NAME", "torch_oom"), "pid": os.getpid(),
           "ok": False, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    try:
        import torch
        out["torch"] = torch.__version__
        out["cuda"] = torch.version.cuda
        workload(torch, out)
        torch.cuda.synchronize()
        stats = torch.cuda.memory_stats(0)
        out["backend"] = torch.cuda.get_allocator_backend()
        out["max_memory_reserved"] = torch.cuda.max_memory_reserved(0)
        out["memory_reserved"] = torch.cuda.memory_reserved(0)
        out["max_memory_allocated"] = torch.cuda.max_memory_allocated(0)
        out["memory_allocated"] = torch.cuda.memory_allocated(0)
        out["stats"] = {k: v for k, v in stats.items() if isinstance(v, int)}
        out["ok"] = True
    except Exception:  # report, do not hide: the table shows FAIL with this text
        out["errors"] = [traceback.format_exc(limit=3)]
        traceback.print_exc()
    path = os.environ.get("GROUND_TRUTH")
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    else:
        print(json.dumps(out, indent=1))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
