"""Programs for the Python package's tests (test_package.py): `python workload.py SCENARIO`, with
allocations made through ctypes on the fake driver, under the shim or not. The last line of stdout
is a JSON object of what the package said, for the test to compare with exact expectations."""

import ctypes
import json
import os
import sys
import time

import gpumemprof

MiB = 1 << 20
_cuda = None
_device = ctypes.c_int(0)


def _call(name, *args):
    r = getattr(_cuda, name)(*args)
    if r != 0:
        raise RuntimeError(f"{name} returned {r}")


_ctx = ctypes.c_void_p()


def init():
    global _cuda
    _cuda = ctypes.CDLL("libcuda.so.1")
    _call("cuInit", 0)
    _call("cuDeviceGet", ctypes.byref(_device), 0)
    _call("cuDevicePrimaryCtxRetain", ctypes.byref(_ctx), _device)
    _call("cuCtxSetCurrent", _ctx)


def use_context():
    """The primary context current in this thread too (init() made it current in its own)."""
    _call("cuCtxSetCurrent", _ctx)


def alloc(n):
    p = ctypes.c_uint64()
    _call("cuMemAlloc_v2", ctypes.byref(p), ctypes.c_size_t(n))
    return p.value


def free(p):
    _call("cuMemFree_v2", ctypes.c_uint64(p))


def alloc_async(n):
    p = ctypes.c_uint64()
    _call("cuMemAllocAsync", ctypes.byref(p), ctypes.c_size_t(n), ctypes.c_void_p(0))
    return p.value


def free_async(p):
    _call("cuMemFreeAsync", ctypes.c_uint64(p), ctypes.c_void_p(0))


def keep_pool_memory():
    """The default pool keeps what is freed (release threshold: all), as a training loop's does."""
    pool = ctypes.c_void_p()
    _call("cuDeviceGetDefaultMemPool", ctypes.byref(pool), _device)
    _call("cuMemPoolSetAttribute", pool, 4, ctypes.byref(ctypes.c_uint64(2**64 - 1)))  # RELEASE_THRESHOLD


def result_fields(r):
    return dict(name=r.function_name, allocated=r.memory_allocated, freed=r.memory_freed, diff=r.memory_diff(),
                peak=r.peak_memory_usage(), before=r.memory_before.allocated_memory,
                after=r.memory_after.allocated_memory, reserved_after=r.memory_after.reserved_memory,
                created=r.tensors_created, deleted=r.tensors_deleted,
                kinds=r.memory_after.allocated_by_kind, timed=r.execution_time > 0)


def profile():
    init()
    base = alloc(2 * MiB)
    profiler = gpumemprof.GPUMemoryProfiler(device="cuda:0")

    def train_step(n):
        a = alloc(n)
        b = alloc(3 * MiB)
        free(b)
        spike = alloc(8 * MiB)  # shorter than any sampling interval
        free(spike)
        return a

    r1 = profiler.profile_function(train_step, MiB)
    with profiler.profile_context("data_loading"):
        c = alloc(5 * MiB)
        inner = profiler.profile_function(train_step, 2 * MiB)
        free(c)
    outer = profiler.results[-1]
    try:
        profiler.profile_function(lambda: (alloc(4 * MiB), 1 / 0))
    except ZeroDivisionError:
        pass
    failed = profiler.results[-1]
    s = profiler.get_summary()
    print(json.dumps(dict(
        first=result_fields(r1), inner=result_fields(inner), outer=result_fields(outer),
        failed=result_fields(failed), recording=gpumemprof.recording(),
        summary={k: s[k] for k in ("total_functions_profiled", "total_function_calls", "peak_memory_usage",
                                   "net_memory_change")},
        functions={k: {f: v[f] for f in ("call_count", "avg_memory_allocated", "peak_memory")}
                   for k, v in s["function_summaries"].items()})))
    free(base)


def tracker():
    init()
    calls = []
    t = gpumemprof.MemoryTracker(device=0, sampling_interval=0.01)
    t.add_alert_callback(lambda e: calls.append((e.event_type, e.memory_allocated, threading_name())))
    t.set_threshold("memory_warning_percent", 50.0)
    t.start_tracking()
    t0 = time.time()
    a = alloc(600 * MiB)  # warning (50% of 1 GiB)
    b = alloc(10 * MiB)   # still over: no second warning
    free(b)
    c = alloc(200 * MiB)  # 810 MiB: critical (75%)
    free(c)
    free(a)
    t.stop_tracking()
    events = t.get_events()
    stats = t.get_statistics()
    t.export_events(sys.argv[2] + "/events.csv", format="csv")
    t.export_events(sys.argv[2] + "/events.json", format="json")
    timeline = t.get_memory_timeline(interval=3600.0)
    print(json.dumps(dict(
        calls=calls, types=[e.event_type for e in events],
        allocations=[(e.memory_allocated, e.memory_change, e.kind) for e in t.get_events(event_type="allocation")],
        last2=[e.event_type for e in t.get_events(last_n=2)],
        since=len(t.get_events(since=t0)), since_future=len(t.get_events(since=time.time() + 60)),
        stats={k: stats[k] for k in ("peak_memory", "total_allocations", "total_deallocations", "alert_count",
                                     "current_memory_allocated", "total_memory", "records_missed")},
        timeline=dict(allocated=timeline["allocated"], peak=timeline["peak_allocated"]))))


def threading_name():
    import threading
    return threading.current_thread().name


def watchdog():
    """Two critical episodes, each with 256 MiB of the pool free but reserved."""
    init()
    keep_pool_memory()
    t = gpumemprof.MemoryTracker(device=0)
    t.start_tracking()
    for _ in range(2):
        p = alloc_async(256 * MiB)
        free_async(p)
        big = alloc(512 * MiB)  # critical at 50%: the watchdog trims the pool's free 256 MiB
        free(big)
        time.sleep(0.05)  # the alert clears once its end has lasted a window (10 sample periods)
        free(alloc(MiB))
    t.stop_tracking()
    cleanups = [(e.memory_change, e.metadata["pools_trimmed"]) for e in t.get_events(event_type="cleanup")]
    s = gpumemprof._native.device_stats(0)
    c = gpumemprof._native.counts()
    print(json.dumps(dict(cleanups=cleanups, counts=[c.cleanups, c.cleanup_bytes], pool_reserved=s.reserved)))


def no_profiler():
    """Without the shim: the package works, says so, and records nothing."""
    p = gpumemprof.GPUMemoryProfiler()
    r = p.profile_function(lambda: None)
    t = gpumemprof.MemoryTracker()
    t.start_tracking()
    t.stop_tracking()
    w = gpumemprof.MemoryWatchdog(t)
    w.force_cleanup()
    child = gpumemprof.run([sys.executable, __file__, "profile"], output=sys.argv[2], capture_output=True, text=True)
    print(json.dumps(dict(loaded=gpumemprof.loaded(), recording=gpumemprof.recording(),
                          allocated=r.memory_allocated, peak=r.peak_memory_usage(),
                          types=[e.event_type for e in t.get_events()],
                          cleanups=w.get_cleanup_stats()["cleanup_count"], child_status=child.returncode,
                          child=json.loads(child.stdout.strip().splitlines()[-1]))))


def torch_level():
    """With PyTorch's allocator bridged, the seed's figures are the tensors' (requested bytes)."""
    import torch
    torch.cuda.init()  # the bridge attaches (and checks itself) here, before the profiled call
    profiler = gpumemprof.GPUMemoryProfiler(device="cuda:0")

    def step():
        x = torch.empty(3000, dtype=torch.uint8, device="cuda")
        y = torch.empty(MiB + 7, dtype=torch.uint8, device="cuda")
        del y
        return x

    r = profiler.profile_function(step)
    stats = torch.cuda.memory_stats(0)
    print(json.dumps(dict(result=result_fields(r), attached=r.memory_after.framework_attached,
                          driver_allocated=r.driver_memory_allocated,
                          torch_requested_current=stats["requested_bytes.all.current"])))


def categories():
    """The fake torch's AdamW loop (tests/fake_torch/category_workload.py, 3 steps, its peak in step 3's
    backward) profiled as one call, with the bootstrap's category hooks: the call's peak and end by
    category, beside the fake's own ledger."""
    import importlib.util
    import torch
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fake_torch", "category_workload.py")
    spec = importlib.util.spec_from_file_location("category_workload", path)
    training = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(training)
    torch.cuda.init()
    profiler = gpumemprof.GPUMemoryProfiler(device="cuda:0")
    with profiler.profile_context("train"):
        model, kept = training.adamw()
    r = profiler.results[-1]
    truth = torch._truth.summary()
    print(json.dumps(dict(peak=r.memory_peak.allocated_memory, peak_categories=r.memory_peak.allocated_by_category,
                          after=r.memory_after.allocated_memory, after_categories=r.memory_after.allocated_by_category,
                          before_categories=r.memory_before.allocated_by_category, truth=truth)))


def query_limits():
    """The query API at the edges of its arguments: no timeout (UINT64_MAX) and nothing after the last seq."""
    init()
    lib = gpumemprof._native._lib
    synced = []
    for _ in range(20):  # each time with a reset and events the collector has yet to handle
        free(alloc(MiB))
        lib.gpumemprof_reset_peaks()
        synced.append(lib.gpumemprof_sync(2**64 - 1))
    buf = (gpumemprof._native.Record * 64)()
    print(json.dumps(dict(synced=synced, after_max=lib.gpumemprof_recent(2**64 - 1, buf, 64),
                          after_zero=lib.gpumemprof_recent(0, buf, 64))))


def threads():
    """Two threads profile their own steps at once: each window holds its own thread's allocation."""
    import threading
    init()
    profiler = gpumemprof.GPUMemoryProfiler(device=0)
    sizes = {"a": 3 * MiB, "b": 5 * MiB}
    short = {}

    def worker(name):
        use_context()
        n = sizes[name]
        results = [profiler.profile_function(lambda: free(alloc(n))) for _ in range(100)]
        short[name] = sum(1 for r in results if min(r.memory_allocated, r.memory_freed, r.peak_memory_usage()) < n)

    ts = [threading.Thread(target=worker, args=(name,)) for name in sizes]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps(dict(short=short, results=len(profiler.results))))


def fork_child():
    """A fork while another thread holds the package's locks (the tracker's thread may, at any
    sampling): the child uses the package all the same."""
    import threading
    init()
    t = gpumemprof.MemoryTracker(device=0, sampling_interval=0.001)
    t.start_tracking()
    profiler = gpumemprof.GPUMemoryProfiler(device=0)
    held, release = threading.Event(), threading.Event()

    def hold():
        with t._lock, gpumemprof._window._lock:
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            t.get_events()
            t.get_statistics()
            profiler.profile_function(lambda: free(alloc(MiB)))
            t.stop_tracking()
            code = 0 if not t.is_tracking else 3
        finally:
            os._exit(code)
    release.set()
    holder.join()
    deadline = time.time() + 10
    status = None
    while time.time() < deadline:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.01)
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        status = "hung"
    t.stop_tracking()
    print(json.dumps(dict(child=status)))


def thresholds():
    t = gpumemprof.MemoryTracker(device=0)
    print(json.dumps(t.thresholds))


def odd_name():
    """profile_context's name as the seed package took it: anything, shown as str(name)."""
    init()
    profiler = gpumemprof.GPUMemoryProfiler(device=0)
    with profiler.profile_context(name=123):
        free(alloc(MiB))
    print(json.dumps(dict(name=profiler.results[-1].function_name, allocated=profiler.results[-1].memory_allocated)))


LEFT_OPEN = None


def left_open():
    """A context entered and never exited: collected at interpreter exit, it says nothing."""
    global LEFT_OPEN
    init()
    profiler = gpumemprof.GPUMemoryProfiler(device=0)
    LEFT_OPEN = (profiler, profiler.profile_context("never_closed"))
    LEFT_OPEN[1].__enter__()
    print(json.dumps(dict(results=len(profiler.results))))


if __name__ == "__main__":
    {"profile": profile, "tracker": tracker, "watchdog": watchdog, "no_profiler": no_profiler,
     "torch_level": torch_level, "categories": categories, "query_limits": query_limits, "threads": threads, "fork_child": fork_child,
     "thresholds": thresholds, "odd_name": odd_name, "left_open": left_open}[sys.argv[1]]()
    sys.stdout.flush()
