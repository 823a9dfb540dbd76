"""What Python frames cost per allocation event, on the fake driver.

    python3 tests/bench/python_frames_bench.py [BUILD_DIR] [--pairs N] [--rounds R] [--depth D]
                                               [--sites S] [--tensors] [--pollute BYTES] [--before SHIM]

Times cuMemAlloc_v2+cuMemFree_v2 pairs called through ctypes.CDLL (which releases the GIL, as
PyTorch does around its operators) from D nested Python frames, in child processes: without the
shim, with it and GPUMEMPROF_PYTHON_STACKS=0, and at default settings (16 native frames plus the
Python frames). Variants are interleaved over R rounds; prints the median ns per pair of each and
the difference, which is the Python frames' cost per allocation event (frees capture no stack).
Times are the calling thread's CPU time.

--tensors times torch.empty pairs on the fake torch instead (the bridge on, and off); with
--sites 0 they come from MODEL, a decoder's tokens, which under the shim also alternate between
recording and paused in one process (what recording a tensor costs, free of the variance between
processes). --pollute writes that many bytes before each of MODEL's layers, as a real layer's work
evicts the caches; --before times an earlier build's shim beside this one."""
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


# A decoder's token, in the shape of HF Llama's greedy generate (about 400 tensors a token from
# about 100 distinct stacks): modules called through a two-frame __call__ (as nn.Module's), 8
# layers from one loop line, allocations at several depths, a rotary helper called twice, and the
# sampling step's own allocations around the model.
def _lines(n):
    return "".join("    t = empty(256, device='cuda')\n" for _ in range(n))


MODEL = f"""
def call(f, x):
    return _call_impl(f, x)
def _call_impl(f, x):
    return f(x)
def linear(x):
    return empty(256, device='cuda')
def norm(x):
{_lines(6)}
def rotary(x):
{_lines(3)}    return call(linear, x)
def attention(x):
    q = call(linear, x)
    k = call(linear, x)
    v = call(linear, x)
    q = rotary(q)
    k = rotary(k)
{_lines(8)}    return call(linear, x)
def mlp(x):
{_lines(3)}    g = call(linear, x)
    u = call(linear, x)
    return call(linear, x)
def layer(x):
    pollute()
    h = call(norm, x)
    h = call(attention, h)
    h = empty(256, device='cuda')
    h = call(norm, h)
    h = call(mlp, h)
    return empty(256, device='cuda')
def model(x):
    for i in range(8):
        x = call(layer, x)
    return call(linear, call(norm, x))
def token(x):
{_lines(30)}    x = call(model, x)
{_lines(30)}
"""


def timed_model(empty, pairs, pollute):
    """MODEL's tokens, as many as make `pairs` tensors, after a warm-up: CPU ns per tensor. Under
    the shim, as many tokens again alternate between recording and paused (gpumemprof_pause), and
    the median difference of neighbouring tokens, per tensor, is "recording_ns" (what recording a
    tensor's allocation costs; its release is recorded either way)."""
    count = []
    scope = {"empty": lambda *a, **k: count.append(1), "pollute": lambda: None}  # a first token counts its tensors
    if pollute:  # what a real layer's work does to the caches between its allocations
        buf = ctypes.create_string_buffer(pollute)
        scope["pollute"] = lambda: ctypes.memset(buf, 1, pollute)
    exec(MODEL, scope)
    scope["token"](None)
    scope["empty"] = empty
    for _ in range(10):
        scope["token"](None)
    tokens = pairs // len(count)
    t0 = time.thread_time_ns()
    for _ in range(tokens):
        scope["token"](None)
    result = {"ns_per_pair": (time.thread_time_ns() - t0) / (tokens * len(count))}
    lib = ctypes.CDLL(None)
    if hasattr(lib, "gpumemprof_pause"):
        diffs = []
        for _ in range(tokens // 2):
            t0 = time.thread_time_ns()
            scope["token"](None)
            t1 = time.thread_time_ns()
            lib.gpumemprof_pause()
            scope["token"](None)
            t2 = time.thread_time_ns()
            lib.gpumemprof_resume()
            diffs.append(((t1 - t0) - (t2 - t1)) / len(count))
        result["recording_ns"] = statistics.median(diffs)
    return result


def tensor_child(pairs, depth, sites, pollute):
    """torch.empty + release on the fake torch (tests/fake_torch): the tracker's events, whose stacks
    are Python frames only. sites == 0: MODEL's tokens."""
    import torch
    torch.empty(256, device="cuda")

    def loop(level):
        if level > 0:
            return loop(level - 1)
        if sites == 0:
            return timed_model(torch.empty, pairs, pollute)
        return {"ns_per_pair": timed_sites("t = empty(256, device='cuda'); del t", {"empty": torch.empty}, pairs, sites)}

    print(json.dumps(loop(depth)))


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
    ap.add_argument("--sites", type=int, default=1,
                    help="allocating lines taken in turn (1: one line; 0, with --tensors: a decoder's tokens)")
    ap.add_argument("--tensors", action="store_true",
                    help="torch.empty on the fake torch: the bridge on against GPUMEMPROF_FRAMEWORK=off")
    ap.add_argument("--pollute", type=int, default=0, metavar="BYTES",
                    help="with --sites 0: write BYTES of memory before each layer (a real program's cold caches)")
    ap.add_argument("--before", metavar="SHIM", help="an earlier build's libgpumemprof.so, timed at defaults too")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        return tensor_child(a.pairs, a.depth, a.sites, a.pollute) if a.tensors else child(a.pairs, a.depth, a.sites)
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
    if a.before:
        variants["before, defaults"] = dict(variants["shim, defaults"], LD_PRELOAD=os.path.abspath(a.before))
    times = {v: [] for v in variants}
    recording = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(list(variants)))
            for v in order:
                env = {k: val for k, val in os.environ.items() if k != "LD_PRELOAD"}  # no shim unless the variant says
                env.update(LD_LIBRARY_PATH=fake, GPUMEMPROF_OUTPUT=os.path.join(tmp, f"r{r}.%p"), **variants[v])
                out = subprocess.run([sys.executable, __file__, "--child", "--pairs", str(a.pairs), "--depth", str(a.depth),
                                      "--sites", str(a.sites), "--pollute", str(a.pollute)] + extra,
                                     env=env, capture_output=True, text=True, check=True).stdout
                result = json.loads(out)
                times[v].append(result["ns_per_pair"])
                if "recording_ns" in result:
                    recording.setdefault(v, []).append(result["recording_ns"])
    med = {v: statistics.median(t) for v, t in times.items()}
    print(f"{a.pairs} pairs from {a.depth} nested Python frames, {a.sites} allocating line(s), median of {a.rounds} "
          f"interleaved rounds:")
    for v, m in med.items():
        print(f"  {v:24s} {m:8.1f} ns/pair")
    if a.tensors:
        print(f"  the bridge's cost       {med['shim, defaults'] - med['shim, FRAMEWORK=off']:8.1f} ns per tensor pair "
              "(its three events and the allocation's Python frames)")
        for v, diffs in recording.items():
            print(f"  {v:24s} {statistics.median(diffs):8.1f} ns per tensor recording against paused, in one process "
                  f"(medians of the rounds {min(diffs):.1f}-{max(diffs):.1f})")
    else:
        print(f"  Python frames cost      {med['shim, defaults'] - med['shim, PYTHON_STACKS=0']:8.1f} ns per allocation "
              "event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
