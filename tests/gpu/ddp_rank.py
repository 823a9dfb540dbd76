"""One rank of the two-rank job of scripts/gpu_check.py (torch_ddp, torch_ddp_oom): a small model
trained with DistributedDataParallel for a few steps, then PyTorch's own figures for the rank's
device, written as ground truth to $GROUND_TRUTH_DIR/gt.rank<R>.json.

With a GPU per rank (issue 18's two-GPU machine), NCCL and rank R on cuda:R. With one GPU, both
ranks share cuda:0 over gloo (NCCL refuses two ranks on one GPU): the per-rank figures, the job view
and the failing rank are checked there, NCCL's buffers and the second device are not.

  ddp_rank.py [--oom-rank R]   rank R then asks for twice its GPU's memory, uncaught (exit 1)
"""
import json
import os
import sys
import traceback

STEPS = 5
WIDTH = 4096
BATCH = 256


def train(torch, dist, device, backend):
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
                                torch.nn.Linear(WIDTH, WIDTH)).to(device)
    ddp = DDP(model, device_ids=[device.index] if backend == "nccl" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    losses = []
    for _ in range(STEPS):
        x = torch.randn(BATCH, WIDTH, device=device)
        loss = ddp(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return ddp, losses


def main():
    oom_rank = int(sys.argv[sys.argv.index("--oom-rank") + 1]) if "--oom-rank" in sys.argv else -1
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    out = {"workload": os.environ.get("GPU_CHECK_NAME", "torch_ddp"), "pid": os.getpid(), "rank": rank,
           "world_size": world, "ok": False, "oom_rank": oom_rank,
           "launcher_env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}}
    path = os.path.join(os.environ.get("GROUND_TRUTH_DIR", "."), f"gt.rank{rank}.json")
    import torch
    import torch.distributed as dist
    keep = None
    try:
        per_gpu = torch.cuda.device_count() >= world
        device = torch.device("cuda", local if per_gpu else 0)
        torch.cuda.set_device(device)
        backend = "nccl" if per_gpu else "gloo"
        dist.init_process_group(backend)
        out.update(device=device.index, backend=backend, torch=torch.__version__,
                   total_memory=torch.cuda.get_device_properties(device).total_memory)
        keep, out["losses"] = train(torch, dist, device, backend)
        dist.barrier()
        torch.cuda.synchronize(device)
        stats = torch.cuda.memory_stats(device)
        out["stats"] = {k: v for k, v in stats.items() if isinstance(v, int)}
        out["max_memory_reserved"] = torch.cuda.max_memory_reserved(device)
        out["memory_reserved"] = torch.cuda.memory_reserved(device)
        out["ok"] = True
    except Exception:
        out["errors"] = [traceback.format_exc(limit=3)]
        traceback.print_exc()
    if out["ok"] and rank == oom_rank:
        out["oom_request"] = 2 * out["total_memory"]
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    if not out["ok"]:
        return 1
    dist.barrier()  # both ranks wrote their figures before one of them fails
    if rank == oom_rank:
        torch.empty(out["oom_request"], dtype=torch.uint8, device=device)  # raises OutOfMemoryError
    dist.destroy_process_group()
    del keep
    return 0


if __name__ == "__main__":
    sys.exit(main())
