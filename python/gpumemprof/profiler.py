"""GPUMemoryProfiler, ProfileResult and MemorySnapshot: the seed package's names and fields, with
every figure from the profiler's exact accounting (docs/python.md)."""

import contextlib
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import _native, _window


def device_index(device):
    """The seed's device forms: "cuda:1", 1, torch.device("cuda:1"), or None for the current device."""
    if device is None:
        torch = sys.modules.get("torch")
        try:
            return int(torch.cuda.current_device()) if torch is not None else 0
        except Exception:
            return 0
    if isinstance(device, int):
        return device
    if not isinstance(device, str):  # a torch.device: its index, or the current device for bare "cuda"
        return int(device.index) if getattr(device, "index", None) is not None else device_index(None)
    text = device
    if text.startswith("cuda"):
        return int(text.split(":", 1)[1]) if ":" in text else 0
    raise ValueError(f"gpumemprof: unsupported device {device!r} (expected 'cuda:N', N or a torch.device)")


def _cpu_rss():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def level_figures(s, at_cut=False):
    """(allocated, reserved) at the seed's level: PyTorch's tensors and cache where the bridge is
    attached on the device, else every allocation the process made there. `at_cut`: as they were
    at the reset that last cut the profiler's window (a profiled call's start or end), not now."""
    if s is None:
        return 0, 0
    if s.framework_attached:
        return (s.reset_tensor_allocated, s.reset_framework_reserved) if at_cut else (
            s.tensor_allocated, s.framework_reserved)
    return driver_figures(s, at_cut)


def driver_figures(s, at_cut=False):
    """(allocated, reserved) at the driver level: every allocation of the process on the device."""
    if s is None:
        return 0, 0
    return (s.reset_allocated, s.reset_reserved) if at_cut else (s.allocated, s.reserved)


@dataclass
class MemorySnapshot:
    timestamp: float
    allocated_memory: int = 0  # the seed's level: tensors (with the bridge) or every allocation
    reserved_memory: int = 0
    active_memory: int = 0  # bytes of live allocations: allocated_memory
    inactive_memory: int = 0  # reserved but unused: reserved_memory - allocated_memory
    cpu_memory: int = 0
    device_id: int = 0
    operation: Optional[str] = None
    stack_trace: Optional[str] = None
    # Ours: the driver level (every allocation of the process, inside a framework or not), by kind.
    driver_allocated_memory: int = 0
    driver_reserved_memory: int = 0
    allocated_by_kind: Dict[str, int] = field(default_factory=dict)
    framework_attached: bool = False
    # Ours, with the bridge: the tensors by what they are for (parameters, gradients, optimizer_state,
    # activations, temporaries, kv_cache, other; unknown: not decided yet), summing to allocated_memory.
    allocated_by_category: Dict[str, int] = field(default_factory=dict)


def snapshot_of(stats, device, operation=None, cpu=False, stack=False, peak_of=None, at_cut=False):
    """A MemorySnapshot from device figures; `peak_of` (a window's figures) makes it the window's peak;
    `at_cut` takes the figures at the window's cut (level_figures)."""
    allocated, reserved = level_figures(stats, at_cut)
    d_alloc, d_res = driver_figures(stats, at_cut)
    kinds = {}
    if stats is not None:
        kinds = {_native.KIND_NAMES[k]: int(stats.kind_allocated[k]) for k in range(1, 6) if stats.kind_allocated[k]}
    attached = bool(stats is not None and stats.framework_attached)
    categories = {}
    if attached:
        categories = _native.by_category(stats.reset_tensor_category if at_cut else stats.tensor_category)
    if peak_of is not None:
        if attached:
            allocated, reserved = peak_of["window_tensor_allocated_peak"], peak_of["window_framework_reserved_peak"]
        else:
            allocated, reserved = peak_of["window_allocated_peak"], peak_of["window_reserved_peak"]
        d_alloc, d_res = peak_of["window_allocated_peak"], peak_of["window_reserved_peak"]
        kinds = {}
        categories = dict(peak_of[_window.PEAK_CATEGORIES]) if attached else {}
    return MemorySnapshot(
        timestamp=time.time(), allocated_memory=int(allocated), reserved_memory=int(reserved),
        active_memory=int(allocated), inactive_memory=int(max(reserved - allocated, 0)),
        cpu_memory=_cpu_rss() if cpu else 0, device_id=device, operation=operation,
        stack_trace="".join(traceback.format_stack()[:-2]) if stack else None,
        driver_allocated_memory=int(d_alloc), driver_reserved_memory=int(d_res), allocated_by_kind=kinds,
        framework_attached=attached, allocated_by_category=categories)


@dataclass
class ProfileResult:
    function_name: str
    execution_time: float
    memory_before: MemorySnapshot
    memory_after: MemorySnapshot
    memory_peak: MemorySnapshot
    memory_allocated: int  # bytes allocated during the call: every allocation, not a before/after difference
    memory_freed: int      # bytes freed during the call
    tensors_created: int = 0  # allocations during the call (tensors with the bridge): exact, not a gc count
    tensors_deleted: int = 0
    cpu_memory_usage: int = 0
    # Ours: the driver level's, whatever the seed's level is.
    driver_memory_allocated: int = 0
    driver_memory_freed: int = 0
    metadata: Dict[str, Any] = field(default_factory=dict)

    def memory_diff(self):
        """Net change of allocated memory over the call."""
        return self.memory_after.allocated_memory - self.memory_before.allocated_memory

    def peak_memory_usage(self):
        """The highest allocated memory during the call, counting every allocation however short."""
        return self.memory_peak.allocated_memory


class GPUMemoryProfiler:
    def __init__(self, device=None, track_tensors=True, track_cpu_memory=True, collect_stack_traces=False):
        _native.say_not_recorded()
        self.device = device_index(device)
        self.track_tensors = track_tensors
        self.track_cpu_memory = track_cpu_memory
        self.collect_stack_traces = collect_stack_traces
        self.results: List[ProfileResult] = []
        self.snapshots: List[MemorySnapshot] = []
        self._monitor = None
        self._monitor_stop = threading.Event()
        _native.sync()
        self.baseline_snapshot = self._snapshot("baseline")

    def _stats(self):
        return _native.device_stats(self.device)

    def _snapshot(self, operation, stats=None, peak_of=None, at_cut=False):
        return snapshot_of(stats if stats is not None else self._stats(), self.device, operation,
                           self.track_cpu_memory, self.collect_stack_traces, peak_of, at_cut)

    def _begin(self, name):
        _native.range_push(name)
        window, before_stats = _window.open_window()
        before = self._snapshot(f"before_{name}", before_stats.get(self.device), at_cut=True)
        return name, window, before, time.perf_counter()

    def _end(self, token):
        name, window, before, start = token
        elapsed = time.perf_counter() - start
        after_stats = _window.close_window(window)
        _native.range_pop()
        stats = after_stats.get(self.device)
        after = self._snapshot(f"after_{name}", stats, at_cut=True)
        w = window.figures(self.device)
        peak = self._snapshot(f"peak_{name}", stats, peak_of=w)
        prefix = "window_tensor_" if stats is not None and stats.framework_attached else "window_"
        self.results.append(ProfileResult(
            function_name=name, execution_time=elapsed, memory_before=before, memory_after=after, memory_peak=peak,
            memory_allocated=w[prefix + "bytes_allocated"], memory_freed=w[prefix + "bytes_freed"],
            tensors_created=w[prefix + "alloc_count"] if self.track_tensors else 0,
            tensors_deleted=w[prefix + "free_count"] if self.track_tensors else 0,
            cpu_memory_usage=after.cpu_memory - before.cpu_memory,
            driver_memory_allocated=w["window_bytes_allocated"], driver_memory_freed=w["window_bytes_freed"]))
        self.snapshots.extend((before, peak, after))

    def profile_function(self, func, *args, **kwargs):
        """Runs func(*args, **kwargs) and returns its ProfileResult (also kept in self.results, even
        when func raises). The call is a range in the trace, named after the function."""
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
        token = self._begin(name)
        try:
            func(*args, **kwargs)
        finally:
            self._end(token)
        return self.results[-1]

    @contextlib.contextmanager
    def profile_context(self, name="context"):
        """Profiles the block; its ProfileResult is self.results[-1]. A range in the trace too. The
        name is taken as str(name), whether the profiler is loaded or not."""
        token = self._begin(str(name))
        try:
            yield
        except GeneratorExit:
            # The block never ended: its context was collected unexited (at interpreter exit, when
            # open() and the profiler may be gone already). No result; its window is dropped, and
            # its range stays open, since this may not be the thread that opened it.
            if not sys.is_finalizing():
                _window.abandon_window(token[1])
            raise
        except BaseException:
            self._end(token)
            raise
        else:
            self._end(token)

    def start_monitoring(self, interval=0.1):
        """Appends a snapshot of the exact figures to self.snapshots every `interval` seconds. The
        peaks do not need it: every allocation is counted however short."""
        if self._monitor is not None:
            return
        self._monitor_stop.clear()

        def loop():
            while not self._monitor_stop.wait(interval):
                self.snapshots.append(self._snapshot("monitoring"))
        self._monitor = threading.Thread(target=loop, name="gpumemprof-monitor", daemon=True)
        self._monitor.start()

    def stop_monitoring(self):
        if self._monitor is None:
            return
        self._monitor_stop.set()
        self._monitor.join()
        self._monitor = None

    def get_summary(self):
        functions = {}
        for r in self.results:
            f = functions.setdefault(r.function_name, {"call_count": 0, "total_time": 0.0, "total_memory_allocated": 0,
                                                       "peak_memory": 0})
            f["call_count"] += 1
            f["total_time"] += r.execution_time
            f["total_memory_allocated"] += r.memory_allocated
            f["peak_memory"] = max(f["peak_memory"], r.peak_memory_usage())
        for f in functions.values():
            f["avg_time"] = f["total_time"] / f["call_count"]
            f["avg_memory_allocated"] = f["total_memory_allocated"] / f["call_count"]
        _native.sync()
        current = self._snapshot("summary")
        return {
            "total_functions_profiled": len(functions),
            "total_function_calls": len(self.results),
            "peak_memory_usage": max((r.peak_memory_usage() for r in self.results), default=0),
            "net_memory_change": current.allocated_memory - self.baseline_snapshot.allocated_memory,
            "current_memory_usage": current.allocated_memory,
            "baseline_memory": self.baseline_snapshot.allocated_memory,
            "snapshots_collected": len(self.snapshots),
            "function_summaries": functions,
            "device": f"cuda:{self.device}",
            "recording": _native.recording(),
        }

    def clear_results(self):
        self.results.clear()
        self.snapshots.clear()
        _native.sync()
        self.baseline_snapshot = self._snapshot("baseline")
