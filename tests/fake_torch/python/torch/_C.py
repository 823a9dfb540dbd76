"""The extension's side: libc10_cuda.so through ctypes, and the OOM observers it calls."""
import ctypes
import os

_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libc10_cuda.so"))


class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "requested_current", "requested_peak", "allocated_current", "allocated_peak", "reserved_current",
        "reserved_peak")]


class Oom(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int64), ("requested", ctypes.c_uint64), ("capacity", ctypes.c_uint64),
                ("free_bytes", ctypes.c_uint64)]


class Block(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int64)] + [(name, ctypes.c_uint64) for name in (
        "segment_address", "segment_size", "segment_stream", "address", "size", "requested_size")] + [
        ("small", ctypes.c_int64), ("state", ctypes.c_int64)]


_lib.fake_torch_init.restype = ctypes.c_int
_lib.fake_torch_malloc.argtypes = [ctypes.c_uint64, ctypes.c_int]
_lib.fake_torch_malloc.restype = ctypes.c_uint64
for _name in ("fake_torch_free", "fake_torch_record_stream"):
    getattr(_lib, _name).argtypes = [ctypes.c_uint64]
    getattr(_lib, _name).restype = None
_lib.fake_torch_use_pool.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
_lib.fake_torch_use_pool.restype = None
_lib.fake_torch_stats.argtypes = [ctypes.c_int, ctypes.POINTER(Stats)]
_lib.fake_torch_reset_peaks.argtypes = [ctypes.c_int]
_lib.fake_torch_last_oom.argtypes = [ctypes.POINTER(Oom)]
_lib.fake_torch_snapshot.argtypes = [ctypes.POINTER(Block), ctypes.c_size_t]
_lib.fake_torch_snapshot.restype = ctypes.c_size_t
_lib.fake_torch_backend.restype = ctypes.c_char_p


class OutOfMemoryError(RuntimeError):
    pass


_oom_observers = []


def _cuda_attach_out_of_memory_observer(observer):
    _oom_observers.append(observer)


def _raise_oom():
    """As PyTorch: the observers run after the allocator let go of its lock, then it raises."""
    oom = Oom()
    _lib.fake_torch_last_oom(ctypes.byref(oom))
    for observer in _oom_observers:
        observer(oom.device, oom.requested, oom.capacity, oom.free_bytes)
    raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {oom.requested} bytes")
