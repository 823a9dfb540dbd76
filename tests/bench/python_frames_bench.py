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


def child(pairs, depth):
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
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        return child(a.pairs, a.depth)
    build = os.path.abspath(a.build)
    shim = os.path.join(build, "lib", "libgpumemprof.so")
    fake = os.path.join(build, "tests", "fake")
    variants = {"without shim": {}, "shim, PYTHON_STACKS=0": {"LD_PRELOAD": shim, "GPUMEMPROF_PYTHON_STACKS": "0"},
                "shim, defaults": {"LD_PRELOAD": shim}}
    times = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(list(variants)))
            for v in order:
                env = {k: val for k, val in os.environ.items() if k != "LD_PRELOAD"}  # no shim unless the variant says
                env.update(LD_LIBRARY_PATH=fake, GPUMEMPROF_OUTPUT=os.path.join(tmp, f"r{r}.%p"), **variants[v])
                out = subprocess.run([sys.executable, __file__, "--child", "--pairs", str(a.pairs), "--depth", str(a.depth)],
                                     env=env, capture_output=True, text=True, check=True).stdout
                times[v].append(json.loads(out)["ns_per_pair"])
    med = {v: statistics.median(t) for v, t in times.items()}
    print(f"{a.pairs} pairs from {a.depth} nested Python frames, median of {a.rounds} interleaved rounds:")
    for v, m in med.items():
        print(f"  {v:24s} {m:8.1f} ns/pair")
    print(f"  Python frames cost      {med['shim, defaults'] - med['shim, PYTHON_STACKS=0']:8.1f} ns per allocation event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
