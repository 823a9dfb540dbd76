"""GPUMEMPROF_DEVICE_LIMIT on a real GPU (docs/device-limit.md), for scripts/gpu_check.py.

Runs itself as child processes under the shim (LD_PRELOAD is inherited), each with its own run
directory runs/<phase>.<pid>, and writes every child's figures to $GROUND_TRUTH for compare.py:

  truth     a seeded MLP training (train.py's model) without a limit: the losses, and per step and
            phase PyTorch's peak reserved bytes and the context beside them (total - free from
            cuMemGetInfo less memory_reserved, at the phase's end: one process on the GPU)
  below     the same training under a limit halfway between the memory after setup and the peak
            (context included): it must raise torch.cuda.OutOfMemoryError, at the first step and
            phase where the truth run's allocated bytes plus context pass the limit, with PyTorch's
            own message naming the limit as the total capacity, and an OOM bundle saying the limit
  above     under a limit of the peak (context included) + 256 MiB: it must complete with the
            truth run's losses and peak reserved bytes, exactly
  fraction  torch.cuda.set_per_process_memory_fraction(below's limit / total), no device limit: the
            comparison (the fraction caps PyTorch's cache only, not the context)
  jax       JAX under a 16 GiB limit: XLA must preallocate 75% of it (memory_stats()["bytes_limit"])

  device_limit.py            orchestrate (what gpu_check.py runs)
  device_limit.py --train    one training child; device_limit.py --jax   the JAX child
"""
import json
import os
import subprocess
import sys

MiB = 1 << 20
GiB = 1 << 30
STEPS = 6
PHASES = ("forward", "backward", "optimizer")
JAX_LIMIT = 16 * GiB


def train(fraction):
    import torch
    torch.manual_seed(0)
    out = {"phases": [], "losses": [], "oom": None}
    if fraction:
        torch.cuda.set_per_process_memory_fraction(fraction, 0)
    free, total = torch.cuda.mem_get_info(0)
    out["total"] = total
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 8192),
                                    torch.nn.GELU(), torch.nn.Linear(8192, 1024)).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        torch.cuda.synchronize()
        out["setup_reserved"] = torch.cuda.memory_reserved(0)
        free, total = torch.cuda.mem_get_info(0)
        out["setup_context"] = (total - free) - out["setup_reserved"]
        for step in range(STEPS):
            x = torch.randn(2048, 4096, device="cuda")
            y = torch.randn(2048, 1024, device="cuda")
            for phase in PHASES:
                out["at"] = [step, phase]
                torch.cuda.reset_peak_memory_stats(0)
                if phase == "forward":
                    loss = torch.nn.functional.mse_loss(model(x), y)
                elif phase == "backward":
                    loss.backward()
                else:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
                free, total = torch.cuda.mem_get_info(0)
                context = (total - free) - torch.cuda.memory_reserved(0)
                out["phases"].append([step, phase, torch.cuda.max_memory_reserved(0), context,
                                      torch.cuda.max_memory_allocated(0)])
            out["losses"].append(loss.item())
    except torch.cuda.OutOfMemoryError as e:
        out["oom"] = {"at": out["at"], "message": str(e).splitlines()[0][:400]}
    out["max_memory_reserved"] = max((p[2] for p in out["phases"]), default=0)
    out["memory_reserved_end"] = torch.cuda.memory_reserved(0)
    print(json.dumps(out))


def jax_child():
    import jax
    import jax.numpy as jnp
    x = jnp.ones((1024, 1024))
    x.block_until_ready()
    stats = jax.devices()[0].memory_stats() or {}
    print(json.dumps({"bytes_limit": stats.get("bytes_limit"), "limit": JAX_LIMIT}))


def child(phase, args, limit=None, fraction=None):
    env = dict(os.environ)
    env.pop("GPUMEMPROF_DEVICE_LIMIT", None)
    env["GPUMEMPROF_OUTPUT"] = os.path.join(os.getcwd(), "runs", phase + ".%p")
    if limit:
        env["GPUMEMPROF_DEVICE_LIMIT"] = str(limit)
    if fraction:
        env["DEVICE_LIMIT_FRACTION"] = repr(fraction)
    p = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, env=env, capture_output=True, text=True,
                       timeout=240)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    result.update({"rc": p.returncode, "limit": limit, "fraction": fraction, "stderr": p.stderr[-2000:]})
    return result


def orchestrate():
    gt = {"workload": os.environ.get("GPU_CHECK_NAME", "device_limit")}
    truth = child("truth", ["--train"])
    gt["truth"] = truth
    if truth.get("rc") == 0 and truth.get("phases"):
        # The peak as the driver counts it: each phase's reserved peak plus the context beside it.
        context = max(p[3] for p in truth["phases"])
        setup = truth["setup_reserved"] + truth["setup_context"]
        peak = max(p[2] + p[3] for p in truth["phases"])
        below = (setup + (peak - setup) // 2) // MiB * MiB
        gt.update({"context": context, "peak_with_context": peak, "limit_below": below,
                   "limit_above": (peak // MiB + 256) * MiB})
        # Where the limit must stop it: the first phase whose allocated bytes plus context pass it.
        # Not its reserved bytes: on a refusal PyTorch frees its unused cache and retries, as it would
        # on a smaller GPU, so a phase whose tensors fit passes with less cache than the truth run kept.
        gt["expected_oom_at"] = next(([p[0], p[1]] for p in truth["phases"] if p[4] + p[3] > below), None)
        gt["below"] = child("below", ["--train"], limit=below)
        gt["above"] = child("above", ["--train"], limit=gt["limit_above"])
        gt["fraction"] = child("fraction", ["--train"], fraction=below / truth["total"])
    gt["jax"] = child("jax", ["--jax"], limit=JAX_LIMIT)
    with open(os.environ.get("GROUND_TRUTH", "gt.json"), "w") as f:
        json.dump(gt, f, indent=1)
    return 0


if __name__ == "__main__":
    if "--train" in sys.argv:
        train(float(os.environ["DEVICE_LIMIT_FRACTION"]) if "DEVICE_LIMIT_FRACTION" in os.environ else None)
    elif "--jax" in sys.argv:
        jax_child()
    else:
        sys.exit(orchestrate())
