"""PyTorch-style programs for the framework-bridge tests (tests/integration/framework_bridge_test.cpp),
on the fake torch. `python torch_workload.py SCENARIO`; the last line of stdout is a JSON object with
what the fake torch itself says (torch.cuda.memory_stats and the segments), for the test to compare
with gpumemprof's summary."""
import ctypes
import importlib.util
import json
import sys

# Probe before importing, as transformers does: the bootstrap's import hook must survive it.
importlib.util.find_spec("torch")
import torch  # noqa: E402

MiB = 1 << 20


def keep(*tensors):
    """Held past the interpreter's end, as by native code: these are the tensors live at exit."""
    for t in tensors:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(t))


def report(**extra):
    segments = torch.cuda.memory_snapshot()
    print(json.dumps(dict(stats=torch.cuda.memory_stats(0), segments=len(segments), **extra)), flush=True)


def basic():
    a = torch.empty(1000, dtype=torch.uint8, device="cuda")  # a 2 MiB segment (small blocks)
    b = torch.empty(3 * MiB, dtype=torch.uint8, device="cuda:0")  # a 20 MiB one
    c = torch.empty(24 * MiB, dtype=torch.uint8, device=0)  # its own 24 MiB one: more than b leaves
    d = torch.empty(100_000, dtype=torch.uint8, device="cuda")  # beside a
    del a, c
    torch.cuda.empty_cache()  # gives c's segment back
    keep(b, d)
    report(tensors=[3 * MiB, 100_000])


def record_stream():
    side = torch.cuda.Stream()
    x = torch.empty(15000, dtype=torch.uint8, device="cuda")
    x.record_stream(side)
    del x  # requested; completes at the synchronize
    y = torch.empty(7000, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    z = torch.empty(9000, dtype=torch.uint8, device="cuda")
    z.record_stream(side)
    del z  # still pending at exit
    keep(y)
    report()


def late():
    """The bridge attached after tensors exist (run with python -S, so no sitecustomize): it seeds
    them from torch.cuda.memory_snapshot()."""
    a = torch.empty(1000, dtype=torch.uint8, device="cuda")
    b = torch.empty(5 * MiB, dtype=torch.uint8, device="cuda")
    p = torch.empty(3000, dtype=torch.uint8, device="cuda")
    p.record_stream(torch.cuda.Stream())
    del p  # pending when the bridge attaches
    import _gpumemprof_bridge

    _gpumemprof_bridge.install()
    c = torch.empty(6 * MiB, dtype=torch.uint8, device="cuda")  # in b's segment
    del c
    torch.cuda.synchronize()
    keep(a, b)
    report()


def oom():
    x = torch.empty(40 * MiB, dtype=torch.uint8, device="cuda")
    try:
        torch.empty(40 * MiB, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as e:
        print("caught:", e)
    keep(x)
    report()


def private_pools():
    """Tensors of a CUDA graph's private pool ({0, 1}, as torch.cuda.graph makes one) beside the
    default pool's: the pool's segments serve only it."""
    a = torch.empty(3 * MiB, dtype=torch.uint8, device="cuda")  # default pool: a 20 MiB segment
    with torch.cuda.private_pool():
        g = torch.empty(4 * MiB, dtype=torch.uint8, device="cuda")  # the pool's own 20 MiB segment
        h = torch.empty(1000, dtype=torch.uint8, device="cuda")  # and its own 2 MiB small one
    del h
    keep(a, g)
    report()


def _site_400():
    return torch.empty(400, dtype=torch.uint8, device="cuda")  # site 400


def _site_500():
    return torch.empty(500, dtype=torch.uint8, device="cuda")  # site 500


def sites():
    """Three allocating lines in turn, 50 times, and two functions called in turn from one line (their
    frames take the same place, running other code): each tensor's stack must name its own line,
    whatever the profiler's per-thread caches of frames and stacks do."""
    for i in range(50):
        a = torch.empty(100, dtype=torch.uint8, device="cuda")  # site 100
        b = torch.empty(200, dtype=torch.uint8, device="cuda")  # site 200
        c = torch.empty(300, dtype=torch.uint8, device="cuda")  # site 300
        d = (_site_400 if i % 2 else _site_500)()
        del a, b, c, d
    report()


def ranges():
    """Three calls of a range "step", each allocating 4 tensors of 2 MiB and dropping them: the
    caching allocator gets one 20 MiB segment in the first step and reuses it, so at the driver
    level the steps allocate 20 MiB once, and at the tensor level 8 MiB each. Marks around them."""
    prof = ctypes.CDLL(None)  # the preloaded shim's marker functions (include/gpumemprof.h)
    torch.empty(1, device="cuda")  # CUDA set up (and the bridge's self-check done) before the steps
    prof.gpumemprof_mark(b"before")
    for _ in range(3):
        prof.gpumemprof_range_push(b"step")
        x = [torch.empty(2 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
        del x
        prof.gpumemprof_range_pop()
    y = torch.empty(3 * MiB, dtype=torch.uint8, device="cuda")
    prof.gpumemprof_mark(b"after")
    keep(y)
    report()


def cpu_only():
    print(torch.__version__, torch.cuda.is_initialized())


if __name__ == "__main__":
    {"basic": basic, "record_stream": record_stream, "late": late, "oom": oom, "cpu_only": cpu_only,
     "private_pools": private_pools, "sites": sites, "ranges": ranges}[sys.argv[1]]()
