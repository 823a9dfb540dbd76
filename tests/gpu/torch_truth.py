"""Shared by the PyTorch workloads of scripts/gpu_check.py: runs a workload and writes PyTorch's own
memory figures as ground truth to $GROUND_TRUTH (stdout when unset). A failure is reported in
"errors", not hidden: the table then shows FAIL with its text."""
import json
import os
import traceback


def record(default_name, body, finish=None):
    """Runs body(torch, out), which may return objects to keep alive until the figures are read,
    then adds PyTorch's counters, then finish(torch, out) if given. Returns the exit status."""
    out = {"workload": os.environ.get("GPU_CHECK_NAME", default_name), "pid": os.getpid(), "ok": False,
           "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
           # The framework bridge's bootstrap is on the path: tensor-level figures are expected.
           "bridge_expected": "gpumemprof/python" in os.environ.get("PYTHONPATH", "")}
    try:
        import torch
        out["torch"] = torch.__version__
        out["cuda"] = torch.version.cuda
        keep = body(torch, out)  # noqa: F841 (kept alive until exit, like a real program)
        torch.cuda.synchronize()
        stats = torch.cuda.memory_stats(0)
        out["backend"] = torch.cuda.get_allocator_backend()
        out["max_memory_reserved"] = torch.cuda.max_memory_reserved(0)
        out["memory_reserved"] = torch.cuda.memory_reserved(0)
        out["max_memory_allocated"] = torch.cuda.max_memory_allocated(0)
        out["memory_allocated"] = torch.cuda.memory_allocated(0)
        out["stats"] = {k: v for k, v in stats.items() if isinstance(v, int)}
        if finish is not None:
            finish(torch, out)
        out["ok"] = True
    except Exception:
        out["errors"] = [traceback.format_exc(limit=3)]
        traceback.print_exc()
    path = os.environ.get("GROUND_TRUTH")
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    else:
        print(json.dumps(out, indent=1))
    return 0 if out["ok"] else 1
