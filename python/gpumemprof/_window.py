"""Peak windows that nest and overlap across threads. The profiler has one window per process
(gpumemprof_reset_peaks), which each reset cuts at its instant: once the collector has applied it,
the window it ended is every device's closed_* figures, holding every event stamped before the reset
and after the one before. Each open and close is such a cut, folded into every window still open:
a window's peak is the highest of its parts and its bytes their sum, so it holds every event between
its own two cuts, whichever thread made it, at any nesting."""

import os
import threading

from . import _native

_FIELDS_MAX = ("window_allocated_peak", "window_reserved_peak", "window_tensor_allocated_peak",
               "window_framework_reserved_peak")
_FIELDS_SUM = ("window_bytes_allocated", "window_bytes_freed", "window_tensor_bytes_allocated",
               "window_tensor_bytes_freed", "window_alloc_count", "window_free_count", "window_tensor_alloc_count",
               "window_tensor_free_count")
# The same figures of the window a reset ended.
_CLOSED = {f: "closed_" + f[len("window_"):] for f in _FIELDS_MAX + _FIELDS_SUM}

# The tensors at the window's tensor peak by category ({name: bytes}; empty before the first fold).
PEAK_CATEGORIES = "window_tensor_peak_category"


def _empty():
    part = dict.fromkeys(_FIELDS_MAX + _FIELDS_SUM, 0)
    part[PEAK_CATEGORIES] = {}
    return part


_lock = threading.Lock()
_open = []


def _after_fork_in_child():
    # A thread that held the lock at fork does not exist in the child: the lock would never be free.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Window:
    def __init__(self):
        self.parts = {}  # device -> {field: value}

    def _fold(self, stats):
        for device, s in stats.items():
            part = self.parts.setdefault(device, _empty())
            if s.closed_tensor_allocated_peak > part["window_tensor_allocated_peak"] or not part[PEAK_CATEGORIES]:
                # The tensors at the window's peak are those at the highest of its parts' peaks.
                part[PEAK_CATEGORIES] = _native.by_category(s.closed_tensor_peak_category)
            for f in _FIELDS_MAX:
                part[f] = max(part[f], getattr(s, _CLOSED[f]))
            for f in _FIELDS_SUM:
                part[f] += getattr(s, _CLOSED[f])

    def figures(self, device):
        return self.parts.get(device, _empty())


def _cut():
    """Ends the process's window now; returns each device's figures once the collector has applied
    the reset (the window it ended, and the levels at it)."""
    _native.reset_peaks()
    _native.sync()
    out = {}
    for d in _native.devices():
        s = _native.device_stats(d)
        if s is not None:
            out[d] = s
    return out


def open_window():
    """A new window; returns (window, the device figures at its start)."""
    with _lock:
        stats = _cut()
        for w in _open:
            w._fold(stats)
        w = Window()
        _open.append(w)
        return w, stats


def close_window(w):
    """Closes `w`; returns the device figures at its end (its own are w.figures(device))."""
    with _lock:
        stats = _cut()
        for other in _open:
            other._fold(stats)
        _open.remove(w)
        return stats


def abandon_window(w):
    """Drops `w` unread: a profiled block that never ended (its generator collected)."""
    with _lock:
        if w in _open:
            _open.remove(w)
