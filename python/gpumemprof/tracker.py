"""MemoryTracker, TrackingEvent and MemoryWatchdog: the seed package's names and fields, over the
profiler's recent records (every allocation, release, alert and cleanup, not samples; docs/python.md)."""

import collections
import contextlib
import csv
import gc
import json
import os
import sys
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional

from . import _native, _thresholds
from .profiler import device_index

_ALERT_TYPES = ("warning", "critical", "error")
# The profiler's alert types as the seed's event types: fragmentation and growth are warnings.
_SEED_ALERT = {1: "warning", 2: "critical", 3: "warning", 4: "warning"}
# Trackers alive, for a forked child to reset (_after_fork_in_child).
_trackers = weakref.WeakSet()


def _after_fork_in_child():
    for t in list(_trackers):
        t._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclass
class TrackingEvent:
    timestamp: float  # time.time()
    event_type: str   # start, stop, allocation, deallocation, peak, warning, critical, error, cleanup
    memory_allocated: int
    memory_reserved: int
    memory_change: int
    device_id: int
    context: Optional[str] = None
    metadata: Dict[str, Any] = field(default_factory=dict)
    # Ours: what the record was (the allocation's kind, the alert), and where.
    kind: Optional[str] = None
    address: int = 0
    size: int = 0


class MemoryTracker:
    def __init__(self, device=None, sampling_interval=0.1, max_events=10000, enable_alerts=True,
                 enable_oom_flight_recorder=True, oom_dump_dir="oom_dumps", oom_buffer_size=10000, oom_max_dumps=5,
                 oom_max_total_mb=256):
        _native.say_not_recorded()
        self.device = device_index(device)
        self.sampling_interval = sampling_interval  # how often the records are read: nothing is sampled
        self.max_events = max_events
        self.enable_alerts = enable_alerts
        self.enable_oom_flight_recorder = enable_oom_flight_recorder
        self.oom_dump_dir = oom_dump_dir
        self.oom_buffer_size = oom_buffer_size
        self.oom_max_dumps = oom_max_dumps
        self.oom_max_total_mb = oom_max_total_mb
        self.backend = "cuda"
        self.collector_capabilities = {"supports_device_total": True, "supports_device_free": True,
                                       "sampling_source": "gpumemprof (every allocation, exact)"}
        self.thresholds = _thresholds.thresholds()  # the profiler's, fixed when the process started
        self.events = collections.deque(maxlen=max_events)
        self.alert_callbacks: List[Callable[[TrackingEvent], None]] = []
        self.is_tracking = False
        self.records_missed = 0  # records overwritten in the profiler before this tracker read them
        self._thread = None
        self._new_locks()
        self._seq = 0
        self._peak = 0
        self._start_time = None
        self._stop_time = None
        self._counts = collections.Counter()
        self._bytes_allocated = 0
        _trackers.add(self)

    def _new_locks(self):
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._served_cond = threading.Condition()
        self._requests = self._served = 0

    def _forked(self):
        """In a forked child: the tracker's thread stayed in the parent, holding whatever lock it held
        at the fork, and the child's profiler starts its records afresh. The child's tracker is
        stopped, with new locks and its events so far; start_tracking() tracks the child."""
        self._new_locks()
        self._thread = None
        if self.is_tracking:
            self.is_tracking = False
            self._stop_time = time.time()

    # Reading the profiler's records: on the tracker's thread, and once more at stop and on demand.
    def _level(self, record, stats_attached):
        return (record.detail == 0) == stats_attached

    def _poll(self):
        with self._lock:
            records = _native.recent(self._seq)
            stats = _native.device_stats(self.device)
            attached = bool(stats is not None and stats.framework_attached)
            alerts = []
            for r in records:
                if r.seq != self._seq + 1 and self._seq != 0:
                    self.records_missed += r.seq - self._seq - 1
                self._seq = r.seq
                if r.device != self.device:
                    continue
                for e in self._events(r, attached):
                    self._add(e)
                    if e.event_type in _ALERT_TYPES:
                        alerts.append(e)
        for e in alerts:  # outside the lock: a callback may query the tracker
            self._fire(e)

    def _events(self, r, attached):
        allocated, reserved = (r.tensor_allocated, r.framework_reserved) if attached else (r.allocated, r.reserved)
        t = _native.wall_time(r.timestamp_ns)
        base = dict(timestamp=t, memory_allocated=int(allocated), memory_reserved=int(reserved), device_id=self.device,
                    address=int(r.address), size=int(r.size))
        if r.type in (_native.ALLOCATION, _native.DEALLOCATION):
            if not self._level(r, attached):
                return []  # the other level's record of the same memory
            kind = _native.KIND_NAMES.get(int(r.detail), "unknown")
            if r.type == _native.ALLOCATION:
                self._counts["allocations"] += 1
                self._bytes_allocated += r.size
                out = [TrackingEvent(event_type="allocation", memory_change=int(r.change), kind=kind, **base)]
                if allocated > self._peak:
                    self._peak = allocated
                    out.append(TrackingEvent(event_type="peak", memory_change=int(r.change), kind=kind,
                                             context=f"new peak: {int(allocated)} bytes", **base))
                return out
            self._counts["deallocations"] += 1
            return [TrackingEvent(event_type="deallocation", memory_change=int(r.change), kind=kind, **base)]
        if r.type == _native.ALERT and self.enable_alerts:
            name = _native.ALERT_NAMES.get(int(r.detail), "alert")
            self._counts["alerts"] += 1
            return [TrackingEvent(event_type=_SEED_ALERT.get(int(r.detail), "warning"), memory_change=0, kind=name,
                                 context=f"{name}: allocated {int(r.allocated)} bytes, threshold {int(r.size)} bytes",
                                 metadata={"alert": name, "threshold_bytes": int(r.size),
                                           "driver_allocated": int(r.allocated), "driver_reserved": int(r.reserved)},
                                 **base)]
        if r.type == _native.OOM:
            self._counts["alerts"] += 1
            return [TrackingEvent(event_type="error", memory_change=0, kind=_native.KIND_NAMES.get(int(r.detail)),
                                  context=f"out of memory: {int(r.size)} bytes asked for", **base)]
        if r.type == _native.CLEANUP:
            return [TrackingEvent(event_type="cleanup", memory_change=-int(r.size), context=(
                f"watchdog trimmed {int(r.detail)} pool(s), {int(r.size)} bytes given back"),
                metadata={"pools_trimmed": int(r.detail), "bytes_released": int(r.size), "source": "native"}, **base)]
        return []

    def _add(self, e):
        self.events.append(e)

    def _fire(self, e):
        for cb in list(self.alert_callbacks):
            try:
                cb(e)
            except Exception as ex:  # a failing callback must not stop the others, nor the tracker
                sys.stderr.write(f"gpumemprof: alert callback {cb!r} raised {ex!r}\n")

    def _marker(self, event_type, context=None, metadata=None, change=0):
        stats = _native.device_stats(self.device)
        from .profiler import level_figures
        allocated, reserved = level_figures(stats)
        with self._lock:
            self._add(TrackingEvent(timestamp=time.time(), event_type=event_type, memory_allocated=int(allocated),
                                    memory_reserved=int(reserved), memory_change=change, device_id=self.device,
                                    context=context, metadata=metadata or {}))

    def start_tracking(self):
        if self.is_tracking:
            return
        _native.sync()
        counts = _native.counts()
        from .profiler import level_figures
        with self._lock:
            self._seq = counts.records if counts is not None else 0
            self._peak = level_figures(_native.device_stats(self.device))[0]  # the peak since the start
        self._start_time, self._stop_time = time.time(), None
        self.is_tracking = True
        self._marker("start", "tracking started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="gpumemprof-tracker", daemon=True)
        self._thread.start()

    # The tracker's thread reads the records every sampling_interval, and at once when asked
    # (flush): alert callbacks run there only, never on the profiler's collector thread.
    def _loop(self):
        while True:
            asked = self._wake.wait(self.sampling_interval)
            self._wake.clear()
            stopping = self._stop.is_set()
            with self._served_cond:
                serving = self._requests
            if asked or stopping:
                _native.sync()
            self._poll()
            with self._served_cond:
                self._served = serving
                self._served_cond.notify_all()
            if stopping:
                return

    def stop_tracking(self):
        if not self.is_tracking:
            return
        self._stop.set()
        self._wake.set()
        self._thread.join()  # its last pass read every record up to now
        self._thread = None
        self.is_tracking = False
        self._stop_time = time.time()
        self._marker("stop", "tracking stopped")

    def flush(self):
        """Has the tracker's thread read every record up to now (it does every sampling_interval)."""
        thread = self._thread
        if thread is None or threading.current_thread() is thread:
            return
        with self._served_cond:
            self._requests += 1
            want = self._requests
        self._wake.set()
        with self._served_cond:
            while self._served < want and thread.is_alive():
                self._served_cond.wait(0.05)

    def __enter__(self):
        self.start_tracking()
        return self

    def __exit__(self, *exc):
        self.stop_tracking()
        return False

    def add_alert_callback(self, callback):
        """callback(event) for each warning, critical and error event, on the tracker's thread."""
        self.alert_callbacks.append(callback)

    def remove_alert_callback(self, callback):
        if callback in self.alert_callbacks:
            self.alert_callbacks.remove(callback)

    def set_threshold(self, name, value):
        """The profiler's thresholds are fixed when the process starts (GPUMEMPROF_WARN_PERCENT and
        the others, or `gpumemprof run --warn-percent`): a different value is kept here and said."""
        env = _thresholds.variable(name)
        if env is not None and value != self.thresholds.get(name):
            sys.stderr.write(f"gpumemprof: {name} is the profiler's {env}, fixed when the process started "
                             f"({self.thresholds[name]}); set {env}={value} for the next run\n")
        self.thresholds[name] = value

    def get_events(self, event_type=None, last_n=None, since=None):
        if self.is_tracking:
            self.flush()
        with self._lock:
            events = [e for e in self.events if (event_type is None or e.event_type == event_type)
                      and (since is None or e.timestamp >= since)]
        return events[-last_n:] if last_n else events

    def get_alerts(self, last_n=None):
        alerts = [e for e in self.get_events() if e.event_type in _ALERT_TYPES]
        return alerts[-last_n:] if last_n else alerts

    def get_statistics(self):
        if self.is_tracking:
            self.flush()
        _native.sync()
        stats = _native.device_stats(self.device)
        from .profiler import level_figures
        allocated, reserved = level_figures(stats)
        total = int(stats.total_bytes) if stats is not None else 0
        peak = int(max(self._peak, allocated))  # since tracking started, every allocation counted
        end = self._stop_time or time.time()
        duration = end - self._start_time if self._start_time else 0.0
        return {
            "backend": self.backend,
            "device": f"cuda:{self.device}",
            "current_memory_allocated": int(allocated),
            "current_memory_reserved": int(reserved),
            "peak_memory": peak,
            "total_memory": total,
            "memory_utilization_percent": 100.0 * allocated / total if total else 0.0,
            "total_events": len(self.events),
            "total_allocations": self._counts["allocations"],
            "total_deallocations": self._counts["deallocations"],
            "alert_count": self._counts["alerts"],
            "tracking_duration_seconds": duration,
            "allocations_per_second": self._counts["allocations"] / duration if duration else 0.0,
            "bytes_allocated_per_second": self._bytes_allocated / duration if duration else 0.0,
            "records_missed": self.records_missed,
            "recording": _native.recording(),
        }

    def get_memory_timeline(self, interval=1.0):
        """The allocated and reserved figures at the end of each `interval` seconds from the first
        event, taken from the events (exact at each bucket's last event), and the bucket's highest."""
        events = self.get_events()
        timeline = {"timestamps": [], "allocated": [], "reserved": [], "peak_allocated": []}
        if not events:
            return timeline
        start = events[0].timestamp
        buckets = collections.OrderedDict()
        for e in events:
            b = int((e.timestamp - start) // interval)
            last = buckets.get(b)
            high = max(last[2], e.memory_allocated) if last else e.memory_allocated
            buckets[b] = (e.memory_allocated, e.memory_reserved, high)
        for b, (allocated, reserved, high) in buckets.items():
            timeline["timestamps"].append(start + b * interval)
            timeline["allocated"].append(allocated)
            timeline["reserved"].append(reserved)
            timeline["peak_allocated"].append(high)
        return timeline

    def export_events(self, filename, format="csv"):
        events = self.get_events()
        fields = ["timestamp", "event_type", "memory_allocated", "memory_reserved", "memory_change", "device_id",
                  "context", "kind", "address", "size", "metadata"]
        if format == "csv":
            with open(filename, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(fields)
                for e in events:
                    d = asdict(e)
                    d["metadata"] = json.dumps(d["metadata"], sort_keys=True)
                    w.writerow(["" if d[k] is None else d[k] for k in fields])
        elif format == "json":
            doc = {"telemetry": {"backend": self.backend, "device": f"cuda:{self.device}",
                                 "capabilities": self.collector_capabilities, "recording": _native.recording(),
                                 "records_missed": self.records_missed},
                   "events": [asdict(e) for e in events]}
            with open(filename, "w") as f:
                json.dump(doc, f, indent=2, sort_keys=True)
                f.write("\n")
        else:
            raise ValueError(f"gpumemprof: export format {format!r}: expected 'csv' or 'json'")

    @contextlib.contextmanager
    def capture_oom(self, context="oom_capture", metadata=None):
        """An out-of-memory error in the block is recorded as an `error` event with the context and
        metadata, then re-raised. The profiler writes its own OOM bundle for every failed
        allocation, PyTorch's included (docs/oom-bundles.md), whatever the block does."""
        try:
            yield
        except Exception as ex:
            if _is_oom(ex):
                self.handle_exception(ex, context=context, metadata=metadata)
            raise

    def handle_exception(self, exc, context=None, metadata=None):
        """Records an OOM `error` event. Returns None: the profiler's own OOM bundle is in the run
        directory's oom/ (docs/oom-bundles.md), written before the failing call returned."""
        if not _is_oom(exc):
            return None
        if self.is_tracking:
            self.flush()
        md = dict(metadata or {})
        md["exception"] = f"{type(exc).__name__}: {exc}"
        self._marker("error", context, md)
        self._fire(self.events[-1])
        return None

    def clear_events(self):
        with self._lock:
            self.events.clear()
            self._counts.clear()
            self._bytes_allocated = 0


def _is_oom(exc):
    text = f"{type(exc).__name__} {exc}".lower()
    return "out of memory" in text or "outofmemory" in text or "resourceexhausted" in text


class MemoryWatchdog:
    """The seed's watchdog: on a warning or critical event of the tracker, at most once per
    min_cleanup_interval seconds, empties PyTorch's cache at cleanup_threshold of the device's
    memory, and also collects garbage and synchronises at aggressive_cleanup_threshold. The native
    watchdog (GPUMEMPROF_WATCHDOG=trim) trims stream-ordered pools, which this one cannot reach."""

    def __init__(self, tracker, auto_cleanup=True, cleanup_threshold=0.9, aggressive_cleanup_threshold=0.95):
        self.tracker = tracker
        self.auto_cleanup = auto_cleanup
        self.cleanup_threshold = cleanup_threshold
        self.aggressive_cleanup_threshold = aggressive_cleanup_threshold
        self.min_cleanup_interval = 30.0
        self.cleanup_count = 0
        self.last_cleanup_time = 0.0
        self.bytes_released = 0
        if auto_cleanup:
            tracker.add_alert_callback(self._handle_alert)

    def _handle_alert(self, event):
        if not self.auto_cleanup or event.event_type not in ("warning", "critical"):
            return
        if time.time() - self.last_cleanup_time < self.min_cleanup_interval:
            return
        stats = _native.device_stats(self.tracker.device)
        total = int(stats.total_bytes) if stats is not None else 0
        usage = event.memory_allocated / total if total else 0.0
        if usage >= self.aggressive_cleanup_threshold:
            self.force_cleanup(aggressive=True)
        elif usage >= self.cleanup_threshold:
            self.force_cleanup(aggressive=False)

    def force_cleanup(self, aggressive=False):
        from .profiler import level_figures
        _native.sync()
        before = level_figures(_native.device_stats(self.tracker.device))[1]
        torch = sys.modules.get("torch")
        if aggressive:
            gc.collect()
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
            if aggressive:
                torch.cuda.synchronize()
        _native.sync()
        after = level_figures(_native.device_stats(self.tracker.device))[1]
        released = max(before - after, 0)
        self.cleanup_count += 1
        self.last_cleanup_time = time.time()
        self.bytes_released += released
        self.tracker._marker("cleanup", "aggressive cleanup" if aggressive else "standard cleanup",
                             {"aggressive": aggressive, "bytes_released": released, "source": "python"}, -released)

    def get_cleanup_stats(self):
        return {"cleanup_count": self.cleanup_count, "last_cleanup_time": self.last_cleanup_time,
                "auto_cleanup_enabled": self.auto_cleanup, "cleanup_threshold": self.cleanup_threshold,
                "aggressive_cleanup_threshold": self.aggressive_cleanup_threshold,
                "min_cleanup_interval": self.min_cleanup_interval, "bytes_released": self.bytes_released}
