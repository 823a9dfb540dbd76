"""gpumemprof top on a real GPU (scripts/gpu_check.py, torch_live), run through `gpumemprof run`:
a PyTorch program that allocates in steps and, after each, asks `gpumemprof top --json` (the
registry of GPUMEMPROF_LIVE_REGISTRY) what it shows of this very process, next to PyTorch's own
counters read at the same moment. The collector publishes within milliseconds of a change; each
step reads again for at most 5 s until the figures agree, and records how long that took.

GMP_TOOL: the gpumemprof command. GROUND_TRUTH (gt.json): {"checks": [{"metric", "shim", "truth"}],
"latency_ms": [...], "program": ..., "state": ...}; compare.py (compare_live) makes one row of each.
"""
import json
import os
import subprocess
import time

import torch

MiB = 1 << 20
checks = []
latency_ms = []
seen_program = [None]


def stat(name):
    return int(torch.cuda.memory_stats(0).get(name, 0))


def top_of_self():
    """This process's device 0 as `gpumemprof top --json` shows it, or None."""
    out = subprocess.run([os.environ["GMP_TOOL"], "top", "--json"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return None
    for p in json.loads(out.stdout).get("processes", []):
        if p.get("pid") == os.getpid():
            seen_program[0] = p.get("program")
            for d in p.get("devices", []):
                if d.get("ordinal") == torch.cuda.current_device():
                    return p, d
    return None


def step(name):
    torch.cuda.synchronize()
    truth = {"tensors": stat("requested_bytes.all.current"), "tensors_peak": stat("requested_bytes.all.peak"),
             "reserved": stat("reserved_bytes.all.current"), "reserved_peak": stat("reserved_bytes.all.peak")}
    began = time.monotonic()
    seen = None
    while time.monotonic() - began < 5:
        got = top_of_self()
        if got is not None:
            fw = got[1].get("framework") or {}
            seen = {"tensors": fw.get("tensors"), "tensors_peak": fw.get("tensors_peak"),
                    "reserved": fw.get("reserved"), "reserved_peak": fw.get("reserved_peak"),
                    "driver_allocated": got[1].get("allocated")}
            if all(seen[k] == truth[k] for k in truth):
                break
        time.sleep(0.01)
    latency_ms.append({"step": name, "ms": round((time.monotonic() - began) * 1000, 1)})
    for k, v in truth.items():
        checks.append({"metric": f"{name}: {k}", "shim": (seen or {}).get(k), "truth": v})
    # What the driver holds for this program is PyTorch's segments: no other allocator runs here.
    checks.append({"metric": f"{name}: driver allocated = PyTorch reserved", "shim": (seen or {}).get("driver_allocated"),
                   "truth": truth["reserved"]})


def main():
    torch.cuda.init()
    x = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
    step("256 MiB tensor")
    y = torch.empty(100 * MiB + 123, dtype=torch.uint8, device="cuda")
    step("+100 MiB tensor")
    del x
    step("first freed (cached)")
    torch.cuda.empty_cache()
    step("empty_cache")
    z = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")
    del z
    step("1 GiB for an instant")
    del y
    torch.cuda.empty_cache()
    step("all freed")
    with open(os.environ.get("GROUND_TRUTH", "gt.json"), "w") as f:
        json.dump({"checks": checks, "latency_ms": latency_ms, "program": seen_program[0]}, f, indent=1)


if __name__ == "__main__":
    main()
