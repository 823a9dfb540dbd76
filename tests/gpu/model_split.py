"""One process using two GPUs (scripts/gpu_check.py's torch_split, issue 18): a model whose first
half lives on cuda:0 and second half on cuda:1, trained for a few steps; PyTorch's own figures for
each device are the ground truth ($GROUND_TRUTH), which the shim's per-device figures must equal.
Needs two GPUs; gpu_check.py does not start it on one."""
import json
import os
import sys
import traceback

STEPS = 5


def main():
    out = {"workload": os.environ.get("GPU_CHECK_NAME", "torch_split"), "pid": os.getpid(), "ok": False}
    try:
        import torch
        d0, d1 = torch.device("cuda", 0), torch.device("cuda", 1)
        torch.manual_seed(0)
        # Unequal halves, so that charging one device's memory to the other cannot go unseen.
        first = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU()).to(d0)
        second = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.ReLU(),
                                     torch.nn.Linear(8192, 4096)).to(d1)
        opt = torch.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=1e-3)
        for _ in range(STEPS):
            x = torch.randn(512, 4096, device=d0)
            loss = second(first(x).to(d1)).square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        out["devices"] = {}
        for d in (d0, d1):
            torch.cuda.synchronize(d)
            stats = torch.cuda.memory_stats(d)
            out["devices"][str(d.index)] = {
                "stats": {k: v for k, v in stats.items() if isinstance(v, int)},
                "max_memory_reserved": torch.cuda.max_memory_reserved(d),
                "memory_reserved": torch.cuda.memory_reserved(d)}
        out["ok"] = True
    except Exception:
        out["errors"] = [traceback.format_exc(limit=3)]
        traceback.print_exc()
    with open(os.environ.get("GROUND_TRUTH", "gt.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
