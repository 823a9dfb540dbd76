"""torch.cuda: lazy initialisation with its queue of calls, and the caching allocator's views."""
import ctypes
import threading

from . import _C
from ._C import OutOfMemoryError  # noqa: F401

_initialized = False
_tls = threading.local()
_queued_calls = []


def is_initialized():
    return _initialized


def _lazy_call(callable):
    """As PyTorch: now if CUDA is initialised, else right after it is."""
    if is_initialized():
        callable()
    else:
        _queued_calls.append(callable)


def _lazy_init():
    """As PyTorch: the queued calls run once, during initialisation, when CUDA calls (a tensor
    allocation) already work but _lazy_init itself returns at once."""
    global _initialized
    if _initialized or getattr(_tls, "is_initializing", False):
        return
    if _C._lib.fake_torch_init() != 0:
        raise RuntimeError("fake CUDA initialisation failed")
    _tls.is_initializing = True
    try:
        for call in _queued_calls:
            call()
    finally:
        del _tls.is_initializing
    _queued_calls.clear()
    _initialized = True


init = _lazy_init


def current_device():
    _lazy_init()
    return 0


def get_allocator_backend():
    return _C._lib.fake_torch_backend().decode()


class Stream:
    pass


def synchronize(device=None):
    _lazy_init()
    _C._lib.fake_torch_synchronize()


def empty_cache():
    if _initialized:
        _C._lib.fake_torch_empty_cache()


def reset_peak_memory_stats(device=None):
    _C._lib.fake_torch_reset_peaks(0 if device is None else int(device))


def reset_accumulated_memory_stats(device=None):
    """The fake keeps no cumulative counters (num_device_alloc and the like): nothing to reset."""


def memory_stats(device=None):
    s = _C.Stats()
    _C._lib.fake_torch_stats(0 if device is None else int(device), ctypes.byref(s))
    return {f"{name}_bytes.all.{which}": getattr(s, f"{name}_{which}")
            for name in ("requested", "allocated", "reserved") for which in ("current", "peak")}


def memory_snapshot():
    """Segments with their blocks, as torch.cuda.memory_snapshot() lists them."""
    count = _C._lib.fake_torch_snapshot(None, 0)
    blocks = (_C.Block * count)()
    _C._lib.fake_torch_snapshot(blocks, count)
    segments = {}
    for b in blocks:
        seg = segments.setdefault((b.device, b.segment_address), {
            "device": b.device, "address": b.segment_address, "total_size": b.segment_size,
            "stream": b.segment_stream, "segment_type": "small" if b.small else "large", "is_expandable": False,
            "blocks": []})
        state = ("inactive", "active_allocated", "active_pending_free")[b.state]
        seg["blocks"].append({"address": b.address, "size": b.size, "requested_size": b.requested_size,
                              "state": state})
    return list(segments.values())


class _PrivatePool:
    """What torch.cuda.graph does to the caching allocator while it captures: tensors come from the
    graph's private pool ({0, n}), whose segments serve nothing else. No graph is captured here."""

    _next = 0

    def __init__(self, pool=None):
        if pool is None:
            _PrivatePool._next += 1
            pool = (0, _PrivatePool._next)
        self.pool = pool

    def __enter__(self):
        _lazy_init()
        _C._lib.fake_torch_use_pool(*self.pool)
        return self

    def __exit__(self, *exc):
        _C._lib.fake_torch_use_pool(0, 0)
        return False


def graph_pool_handle():
    _PrivatePool._next += 1
    return (0, _PrivatePool._next)


def private_pool(pool=None):
    return _PrivatePool(pool)
