"""The preloaded profiler's query and marker functions (include/gpumemprof.h), through ctypes.

Without the profiler in the process every figure is absent: `recording()` is False and the package
says once, on stderr, that nothing is recorded.
"""

import ctypes
import os
import sys
import threading
import time

_KINDS = 6  # kind_allocated[1..5]: linear, pool, vmm, array, managed
KIND_NAMES = {0: "tensor", 1: "linear", 2: "pool", 3: "vmm", 4: "array", 5: "managed"}
ALERT_NAMES = {1: "warning", 2: "critical", 3: "fragmentation", 4: "growth"}
# The tensor categories, by their index in tensor_category and the arrays after it (GPUMEMPROF_CATEGORY_*).
CATEGORY_NAMES = ("unknown", "parameters", "gradients", "optimizer_state", "activations", "temporaries", "kv_cache",
                  "other")
ALLOCATION, DEALLOCATION, ALERT, ALERT_CLEARED, CLEANUP, OOM = 1, 2, 3, 4, 5, 6
SYNC_TIMEOUT_MS = 2000


def by_category(array):
    """{category name: bytes} of a tensor_category-like array."""
    return {name: int(array[i]) for i, name in enumerate(CATEGORY_NAMES)}


def _u64(*names):
    return [(n, ctypes.c_uint64) for n in names]


class DeviceStats(ctypes.Structure):
    _fields_ = (
        [("device", ctypes.c_int64)]
        + _u64("total_bytes", "as_of_ns", "allocated", "allocated_peak", "reserved", "reserved_peak")
        + [("kind_allocated", ctypes.c_uint64 * _KINDS), ("kind_allocated_peak", ctypes.c_uint64 * _KINDS)]
        + _u64("alloc_count", "free_count", "failed_alloc_count", "framework_attached", "tensor_allocated",
               "tensor_allocated_peak", "framework_reserved", "framework_reserved_peak", "framework_cached",
               "tensor_alloc_count", "tensor_free_count", "window_allocated_peak", "window_reserved_peak",
               "window_tensor_allocated_peak", "window_framework_reserved_peak", "window_bytes_allocated",
               "window_bytes_freed", "window_tensor_bytes_allocated", "window_tensor_bytes_freed",
               "window_alloc_count", "window_free_count", "window_tensor_alloc_count", "window_tensor_free_count",
               "reset_allocated", "reset_reserved", "reset_tensor_allocated", "reset_framework_reserved",
               "closed_allocated_peak", "closed_reserved_peak", "closed_tensor_allocated_peak",
               "closed_framework_reserved_peak", "closed_bytes_allocated", "closed_bytes_freed",
               "closed_tensor_bytes_allocated", "closed_tensor_bytes_freed", "closed_alloc_count", "closed_free_count",
               "closed_tensor_alloc_count", "closed_tensor_free_count")
        + [(n, ctypes.c_uint64 * len(CATEGORY_NAMES))
           for n in ("tensor_category", "reset_tensor_category", "closed_tensor_peak_category")]
    )


class Counts(ctypes.Structure):
    _fields_ = (
        _u64("events", "records", "devices")
        + [("device_ordinals", ctypes.c_int64 * 16)]
        + _u64("alloc_count", "free_count", "failed_alloc_count")
        + [("alerts_fired", ctypes.c_uint64 * 5)]
        + _u64("cleanups", "cleanup_bytes")
    )


class Record(ctypes.Structure):
    _fields_ = (
        _u64("seq", "timestamp_ns") + [("device", ctypes.c_int64)] + _u64("type", "detail", "size", "address")
        + [("change", ctypes.c_int64)] + _u64("allocated", "reserved", "tensor_allocated", "framework_reserved")
    )


def _load():
    try:
        lib = ctypes.CDLL(None)
        lib.gpumemprof_device_stats  # noqa: B018  (present only with the profiler preloaded)
    except (OSError, AttributeError):
        return None
    lib.gpumemprof_device_stats.argtypes = [ctypes.c_int, ctypes.POINTER(DeviceStats), ctypes.c_size_t]
    lib.gpumemprof_device_stats.restype = ctypes.c_int
    lib.gpumemprof_counts.argtypes = [ctypes.POINTER(Counts), ctypes.c_size_t]
    lib.gpumemprof_counts.restype = ctypes.c_int
    lib.gpumemprof_reset_peaks.argtypes = []
    lib.gpumemprof_reset_peaks.restype = None
    lib.gpumemprof_sync.argtypes = [ctypes.c_uint64]
    lib.gpumemprof_sync.restype = ctypes.c_int
    lib.gpumemprof_recent.argtypes = [ctypes.c_uint64, ctypes.POINTER(Record), ctypes.c_size_t]
    lib.gpumemprof_recent.restype = ctypes.c_size_t
    lib.gpumemprof_range_push.argtypes = [ctypes.c_char_p]
    lib.gpumemprof_range_push.restype = None
    lib.gpumemprof_range_pop.argtypes = []
    lib.gpumemprof_range_pop.restype = None
    return lib


_lib = _load()
_warned = False
_warn_lock = threading.Lock()


def _after_fork_in_child():
    global _warn_lock  # a thread that held it at the fork is not in the child
    _warn_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)

# CLOCK_MONOTONIC (the records' clock, and time.monotonic's on Linux) to the seed's time.time().
_WALL_OFFSET = time.time() - time.monotonic()


def loaded():
    """True when libgpumemprof.so is in this process."""
    return _lib is not None


def recording():
    """True when the profiler is loaded and recording this process (it starts at the first GPU allocation)."""
    return _lib is not None and _lib.gpumemprof_counts(None, 0) == 1


def say_not_recorded():
    """Once per process: without the profiler nothing is recorded; the figures are all zero."""
    global _warned
    if _lib is not None:
        return
    with _warn_lock:
        if _warned:
            return
        _warned = True
    sys.stderr.write(
        "gpumemprof: the profiler is not loaded in this process, so nothing is recorded and every figure "
        "is 0; run the program under `gpumemprof run -- python ...` or start it with gpumemprof.run([...])\n"
    )


def wall_time(monotonic_ns):
    return _WALL_OFFSET + monotonic_ns / 1e9


def sync():
    if _lib is not None:
        _lib.gpumemprof_sync(SYNC_TIMEOUT_MS)


def reset_peaks():
    if _lib is not None:
        _lib.gpumemprof_reset_peaks()


def device_stats(device):
    """The device's figures, or None (no profiler, or the device has none yet)."""
    if _lib is None:
        return None
    s = DeviceStats()
    return s if _lib.gpumemprof_device_stats(device, ctypes.byref(s), ctypes.sizeof(s)) == 1 else None


def counts():
    if _lib is None:
        return None
    c = Counts()
    return c if _lib.gpumemprof_counts(ctypes.byref(c), ctypes.sizeof(c)) == 1 else None


def devices():
    c = counts()
    return [int(c.device_ordinals[i]) for i in range(c.devices)] if c is not None else []


_BATCH = 1024


def recent(after_seq):
    """Records after `after_seq`, oldest first (each a Record)."""
    out = []
    if _lib is None:
        return out
    buf = (Record * _BATCH)()
    while True:
        n = _lib.gpumemprof_recent(after_seq, buf, _BATCH)
        out.extend(Record.from_buffer_copy(buf[i]) for i in range(n))
        if n < _BATCH:
            return out
        after_seq = buf[n - 1].seq


def range_push(name):
    if _lib is not None:
        _lib.gpumemprof_range_push(name.encode("utf-8", "replace"))


def range_pop():
    if _lib is not None:
        _lib.gpumemprof_range_pop()
