"""The Python package's seed examples on a real GPU (scripts/gpu_check.py, torch_python_api and
torch_python_watchdog), run through `gpumemprof run`, which puts the package on PYTHONPATH.

  python_api.py            the seed's train_step Linear example (profile_function), its
                           profile_context("data_loading") block and a tracker with an alert callback
                           around a training loop: each figure next to torch.cuda's own counters
  python_api.py watchdog   PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, GPUMEMPROF_WATCHDOG=trim:
                           a critical alert trims the pool's free bytes; the cleanup against the
                           pool's reserved bytes before and after, as the driver reports them
                           (the driver call goes through the shim's own wrapper: no event changes)

GROUND_TRUTH (gt.json): {"checks": [{"metric", "shim", "truth"}], "callbacks": [...], ...}; compare.py
(compare_python_api) makes one row of each check.
"""
import ctypes
import json
import os
import sys
import threading
import time

import torch

from gpumemprof import GPUMemoryProfiler, MemoryTracker, MemoryWatchdog  # the only change: the import

checks = []


def check(metric, shim, truth):
    checks.append({"metric": metric, "shim": int(shim), "truth": int(truth)})


def stat(name):
    return int(torch.cuda.memory_stats(0).get(name, 0))


def windowed(what, run, result_of):
    """Runs `run` between torch's own counters (requested bytes: what the program asked for, the
    bridge's tensor level) and checks the ProfileResult `result_of()` gives against them."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(0)
    before_current, before_alloc, before_freed = (stat("requested_bytes.all.current"),
                                                  stat("requested_bytes.all.allocated"),
                                                  stat("requested_bytes.all.freed"))
    run()
    torch.cuda.synchronize()
    r = result_of()
    check(f"{what} memory_allocated", r.memory_allocated, stat("requested_bytes.all.allocated") - before_alloc)
    check(f"{what} memory_freed", r.memory_freed, stat("requested_bytes.all.freed") - before_freed)
    check(f"{what} peak_memory_usage()", r.peak_memory_usage(), stat("requested_bytes.all.peak"))
    check(f"{what} memory_before.allocated_memory", r.memory_before.allocated_memory, before_current)
    check(f"{what} memory_after.allocated_memory", r.memory_after.allocated_memory,
          stat("requested_bytes.all.current"))
    check(f"{what} memory_after.reserved_memory", r.memory_after.reserved_memory, stat("reserved_bytes.all.current"))
    check(f"{what} memory_peak.reserved_memory", r.memory_peak.reserved_memory, stat("reserved_bytes.all.peak"))
    return r


def seed_examples(gt):
    # The seed's profiler example, unchanged.
    def train_step(model, data):
        output = model(data)
        loss = output.sum()
        loss.backward()
        return loss

    profiler = GPUMemoryProfiler(device="cuda:0")
    model = torch.nn.Linear(1000, 1000).cuda()
    data = torch.randn(32, 1000).cuda()
    holder = []
    windowed("train_step", lambda: holder.append(profiler.profile_function(train_step, model, data)),
             lambda: holder[-1])
    result = holder[-1]
    print(f"Memory allocated: {result.memory_allocated / 1024**2:.2f} MB")
    print(f"Peak memory: {result.peak_memory_usage() / 1024**2:.2f} MB")
    print(f"Execution time: {result.execution_time:.4f}s")

    # The seed's context-manager example; its three tensors are still referenced when the context
    # exits, so they are kept past the window that torch's counters are read around.
    kept = []

    def data_loading():
        with profiler.profile_context(name="data_loading"):
            data = torch.randn(1000, 1000).cuda()
            processed = data @ data.T
            result = processed.softmax(dim=-1)
        kept.append((data, processed, result))
    windowed("data_loading", data_loading, lambda: profiler.results[-1])
    kept.clear()

    summary = profiler.get_summary()
    check("summary total_function_calls", summary["total_function_calls"], 2)

    # The seed's tracker with an alert callback around a training loop (GPUMEMPROF_WARN_PERCENT=1:
    # the loop's 2 GiB batch crosses it, the first time only: hysteresis).
    calls = []

    def on_memory_alert(event):
        calls.append((event.event_type, event.kind, threading.current_thread().name, event.memory_allocated))
        if event.event_type == 'critical':
            print(f"CRITICAL: {event.context}")
            torch.cuda.empty_cache()

    with MemoryTracker(device="cuda:0") as tracker:
        tracker.add_alert_callback(on_memory_alert)
        torch.cuda.reset_peak_memory_stats(0)
        big = 2 * 1024**3
        for _ in range(5):
            batch = torch.empty(big, dtype=torch.uint8, device="cuda")
            train_step(model, data)
            del batch
        torch.cuda.synchronize()
        stats = tracker.get_statistics()
    check("tracker peak_memory", stats["peak_memory"], stat("requested_bytes.all.peak"))
    # Fragmentation and growth alerts are the package's "warning" events too: counted apart (event.kind).
    check("tracker warning-alert callbacks", [c[1] for c in calls].count("warning"), 1)
    check("tracker callbacks on the tracker's thread", sum(c[2] == "gpumemprof-tracker" for c in calls), len(calls))
    check("tracker 2 GiB allocations", sum(1 for e in tracker.get_events(event_type="allocation") if e.size == big), 5)
    gt["callbacks"] = calls


def pool_reserved():
    cuda = ctypes.CDLL("libcuda.so.1")
    pool, value = ctypes.c_void_p(), ctypes.c_uint64()
    assert cuda.cuDeviceGetMemPool(ctypes.byref(pool), 0) == 0
    assert cuda.cuMemPoolGetAttribute(pool, 5, ctypes.byref(value)) == 0  # RESERVED_MEM_CURRENT
    return value.value


def watchdog(gt):
    """GPUMEMPROF_CRITICAL_PERCENT=4 (5.6 GiB of an H200), GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS=0:
    the 8 GiB tensor fires critical with nothing spare in the pool (a cleanup of 0 bytes, made
    before the tensor is freed); once
    the alert cleared, the 6 GiB one fires it again with the 8 GiB chunk kept by the pool: the
    trim gives back what the pool holds beyond it."""
    GiB = 1024**3
    tracker = MemoryTracker(device="cuda:0")
    watchdog = MemoryWatchdog(tracker)  # the seed's, beside the native one
    tracker.start_tracking()
    x = torch.empty(8 * GiB, dtype=torch.uint8, device="cuda")
    tracker.flush()  # the collector has handled the alert, and trimmed, while x is in use
    del x
    torch.cuda.synchronize()
    time.sleep(1.5)  # the critical alert clears once its end lasted a window (1 s)
    z = torch.empty(1024**2, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    spare = pool_reserved()  # the pool keeps the freed 8 GiB (PyTorch's release threshold)
    y = torch.empty(6 * GiB, dtype=torch.uint8, device="cuda")
    tracker.flush()
    after = pool_reserved()
    cleanups = [-e.memory_change for e in tracker.get_events(event_type="cleanup")
                if e.metadata.get("source") == "native"]
    check("native cleanups", len(cleanups), 2)
    check("first cleanup (nothing spare)", cleanups[0] if cleanups else -1, 0)
    check("second cleanup bytes == pool reserved before - after", cleanups[-1] if cleanups else -1, spare - after)
    gt["pool_reserved"] = [spare, after]
    gt["python_watchdog"] = watchdog.get_cleanup_stats()
    del y, z
    tracker.stop_tracking()


def main():
    gt = {}
    (watchdog if sys.argv[1:] == ["watchdog"] else seed_examples)(gt)
    gt["checks"] = checks
    with open(os.environ.get("GROUND_TRUTH", "gt.json"), "w") as f:
        json.dump(gt, f, indent=1)


if __name__ == "__main__":
    main()
