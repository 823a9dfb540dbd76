"""A small PyTorch training job for scripts/gpu_check.py: an MLP trained with Adam, with NVTX
ranges around forward, backward and the optimizer step (as users write for Nsight) and a
gpumemprof mark at the end of each epoch (through ctypes; a no-op without the profiler).

    train.py              train, then write PyTorch's memory figures as ground truth (torch_truth)
    train.py --bench N    time N training steps after warm-up; print {"median_step_ms": ...}
    train.py --bench N --history   the same with torch.cuda.memory._record_memory_history(stacks="python")
"""
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_truth import record  # noqa: E402

_mark = getattr(ctypes.CDLL(None), "gpumemprof_mark", None)


def mark(name):
    if _mark is not None:
        _mark(name.encode())


def build_model(torch):
    layers = [torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 8192), torch.nn.GELU(),
              torch.nn.Linear(8192, 1024)]
    return torch.nn.Sequential(*layers).cuda()


def make_batch(torch, size=512):
    return torch.randn(size, 4096, device="cuda"), torch.randn(size, 1024, device="cuda")


def requested(torch):
    """The bytes PyTorch's caching allocator has handed out so far, as requested (what the profiler's
    tensor level counts)."""
    return torch.cuda.memory_stats()["requested_bytes.all.allocated"]


def train_step(torch, model, optimizer, x, y, out=None):
    before = requested(torch) if out is not None else 0
    with torch.cuda.nvtx.range("forward"):
        loss = torch.nn.functional.mse_loss(model(x), y)
    if out is not None:  # the forward range's tensors, for its tensor-level figures
        out["forward_requested_bytes"] = out.get("forward_requested_bytes", 0) + requested(torch) - before
    with torch.cuda.nvtx.range("backward"):
        loss.backward()
    with torch.cuda.nvtx.range("optimizer"):
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return loss


def train(torch, out):
    model = build_model(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = make_batch(torch)
    for epoch in range(3):
        for _ in range(10):
            train_step(torch, model, optimizer, x, y, out)
        torch.cuda.synchronize()
        mark(f"epoch {epoch}")
    out["parameters"] = sum(p.numel() for p in model.parameters())
    out["total_memory"] = torch.cuda.get_device_properties(0).total_memory
    return model, optimizer


def bench(steps, history=False):
    import torch
    if history:  # PyTorch's own recorder, the alternative users have
        torch.cuda.memory._record_memory_history(stacks="python")
    model = build_model(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = make_batch(torch)
    for _ in range(10):
        train_step(torch, model, optimizer, x, y)
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        train_step(torch, model, optimizer, x, y)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"median_step_ms": statistics.median(times), "steps": steps,
                      "profiled": "libgpumemprof" in os.environ.get("LD_PRELOAD", "")}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--bench":
        sys.exit(bench(int(sys.argv[2]), "--history" in sys.argv[3:]))
    sys.exit(record("train", train))
