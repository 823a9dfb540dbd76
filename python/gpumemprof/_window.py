"""Peak windows that nest: the profiler has one window per process (gpumemprof_reset_peaks), so
each open or close folds the current window into every window still open and starts a new one.
A window's peak is the highest of its parts and its bytes their sum: exact at any nesting."""

import threading

from . import _native

_FIELDS_MAX = ("window_allocated_peak", "window_reserved_peak", "window_tensor_allocated_peak",
               "window_framework_reserved_peak")
_FIELDS_SUM = ("window_bytes_allocated", "window_bytes_freed", "window_tensor_bytes_allocated",
               "window_tensor_bytes_freed", "window_alloc_count", "window_free_count", "window_tensor_alloc_count",
               "window_tensor_free_count")

_lock = threading.Lock()
_open = []


class Window:
    def __init__(self):
        self.parts = {}  # device -> {field: value}

    def _fold(self, stats):
        for device, s in stats.items():
            part = self.parts.setdefault(device, dict.fromkeys(_FIELDS_MAX + _FIELDS_SUM, 0))
            for f in _FIELDS_MAX:
                part[f] = max(part[f], getattr(s, f))
            for f in _FIELDS_SUM:
                part[f] += getattr(s, f)

    def figures(self, device):
        return self.parts.get(device, dict.fromkeys(_FIELDS_MAX + _FIELDS_SUM, 0))


def _all_stats():
    out = {}
    for d in _native.devices():
        s = _native.device_stats(d)
        if s is not None:
            out[d] = s
    return out


def open_window():
    """A new window; returns (window, the device figures just before it)."""
    with _lock:
        _native.sync()
        stats = _all_stats()
        for w in _open:
            w._fold(stats)
        _native.reset_peaks()
        w = Window()
        _open.append(w)
        return w, stats


def close_window(w):
    """Closes `w`; returns the device figures at its end (its own are w.figures(device))."""
    with _lock:
        _native.sync()
        stats = _all_stats()
        for other in _open:
            other._fold(stats)
        _open.remove(w)
        if _open:
            _native.reset_peaks()
        return stats
