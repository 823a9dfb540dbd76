"""What Python frames cost per allocation event, on the fake driver.

    python3 tests/bench/python_frames_bench.py [BUILD_DIR] [--pairs N] [--rounds R] [--depth D]

Times cuMemAlloc_v2+cuMemFree_v2 pairs called through ctypes.CDLL (which releases the GIL, as
PyTorch does around its operators) from D nested Python frames, in child processes: without the
shim, with it and GPUMEMPROF_PYTHON_STACKS=0, and at default settings (16 native frames plus the
Python frames). Variants are interleaved over R rounds; prints the median ns per pair of each and
the difference, which is the Python frames' cost per allocation event (frees capture no stack).
Times are the calling thread's CPU time."""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed_sites(statement, scope, pairs, sites):
    """`statement` written on `sites` lines in turn (a new stack at each allocation, as in a real
    program), run pairs // sites times after a warm-up: the calling thread's CPU ns per statement."""
    body = "".join(f"    {statement}  # site {i}\n" for i in range(sites))
    exec(f"def rotate(n):\n  for _ in range(n):\n{body}", scope)
    scope["rotate"](1000 // sites + 1)  # warm-up: interning, caches
    t0 = time.thread_time_ns()
    scope["rotate"](pairs // sites)
    return (time.thread_time_ns() - t0) / (pairs // sites * sites)


def tensor_child(pairs, depth, sites):
    """torch.empty + release on the fake torch (tests/fake_torch): the tracker's events, whose stacks
    are Python frames only."""
    import torch
    torch.empty(256, device="cuda")

    def loop(level):
        if level > 0:
            return loop(level - 1)
        return timed_sites("t = empty(256, device='cuda'); del t", {"empty": torch.empty}, pairs, sites)

    print(json.dumps({"ns_per_pair": loop(depth)}))


def child(pairs, depth, sites):
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    ptr, size = ctypes.c_uint64(), ctypes.c_size_t(1 << 20)
    alloc, free, ref = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2, ctypes.byref(ptr)

    def loop(level):
        if level > 0:
            return loop(level - 1)
        for _ in range(1000):  # warm-up: interning, caches
            alloc(ref, size)
            free(ptr)
        # The allocating thread's CPU time: the same as wall time on an idle host, and still the
        # allocation path's own cost on a busy one (the collector thread's work is not in it).
        if sites > 1:
            scope = {"alloc": alloc, "free": free, "ref": ref, "size": size, "ptr": ptr}
            return timed_sites("alloc(ref, size); free(ptr)", scope, pairs, sites)
        t0 = time.thread_time_ns()
        for _ in range(pairs):
            alloc(ref, size)
            free(ptr)
        return (time.thread_time_ns() - t0) / pairs

    print(json.dumps({"ns_per_pair": loop(depth)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--pairs", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--sites", type=int, default=1, help="allocating lines taken in turn (1: one line)")
    ap.add_argument("--tensors", action="store_true",
                    help="torch.empty on the fake torch: the bridge on against GPUMEMPROF_FRAMEWORK=off")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        return (tensor_child if a.tensors else child)(a.pairs, a.depth, a.sites)
    build = os.path.abspath(a.build)
    shim = os.path.join(build, "lib", "libgpumemprof.so")
    fake = os.path.join(build, "tests", "fake")
    variants = {"without shim": {}, "shim, PYTHON_STACKS=0": {"LD_PRELOAD": shim, "GPUMEMPROF_PYTHON_STACKS": "0"},
                "shim, defaults": {"LD_PRELOAD": shim}}
    extra = []
    if a.tensors:  # the documented preload route to the bridge: the bootstrap first on PYTHONPATH
        path = os.path.join(build, "lib", "gpumemprof", "python") + ":" + os.path.join(build, "tests", "fake_torch", "python")
        variants = {"without shim": {"PYTHONPATH": os.path.join(build, "tests", "fake_torch", "python")},
                    "shim, FRAMEWORK=off": {"LD_PRELOAD": shim, "PYTHONPATH": path, "GPUMEMPROF_FRAMEWORK": "off"},
                    "shim, defaults": {"LD_PRELOAD": shim, "PYTHONPATH": path}}
        extra = ["--tensors"]
    times = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(list(variants)))
            for v in order:
                env = {k: val for k, val in os.environ.items() if k != "LD_PRELOAD"}  # no shim unless the variant says
                env.update(LD_LIBRARY_PATH=fake, GPUMEMPROF_OUTPUT=os.path.join(tmp, f"r{r}.%p"), **variants[v])
                out = subprocess.run([sys.executable, __file__, "--child", "--pairs", str(a.pairs), "--depth", str(a.depth),
                                      "--sites", str(a.sites)] + extra,
                                     env=env, capture_output=True, text=True, check=True).stdout
                times[v].append(json.loads(out)["ns_per_pair"])
    med = {v: statistics.median(t) for v, t in times.items()}
    print(f"{a.pairs} pairs from {a.depth} nested Python frames, {a.sites} allocating line(s), median of {a.rounds} "
          f"interleaved rounds:")
    for v, m in med.items():
        print(f"  {v:24s} {m:8.1f} ns/pair")
    if a.tensors:
        print(f"  the bridge's cost       {med['shim, defaults'] - med['shim, FRAMEWORK=off']:8.1f} ns per tensor pair "
              "(its three events and the allocation's Python frames)")
    else:
        print(f"  Python frames cost      {med['shim, defaults'] - med['shim, PYTHON_STACKS=0']:8.1f} ns per allocation "
              "event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
