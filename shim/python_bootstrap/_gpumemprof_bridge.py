"""Attaches gpumemprof to PyTorch's CUDA caching allocator (docs/framework-bridge.md).

Runs inside the profiled program, so it must never raise, never change what the program sees, and
never initialise CUDA itself: the attach is queued with torch.cuda._lazy_call, which runs it right
after PyTorch initialises CUDA for the program's own first use. The work is done by the preloaded
libgpumemprof.so (shim/framework_bridge.cpp); without it loaded, this module does nothing.
"""

import ctypes
import os
import re
import sys

import _gpumemprof_categories as _categories

# format/event.h Op values the seed uses.
_TENSOR_ALLOC, _TENSOR_FREE_REQUESTED, _SEGMENT_ALLOC, _SEGMENT_MAP = 22, 23, 25, 27
_shim = None


def _load_shim():
    """The preloaded shim's bridge functions, or None when the shim is not in this process."""
    try:
        lib = ctypes.CDLL(None)
        attach = lib.gpumemprof_framework_attach
    except (OSError, AttributeError):
        return None
    attach.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p]
    attach.restype = ctypes.c_int
    lib.gpumemprof_framework_seed.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_uint64] * 3
    lib.gpumemprof_framework_seed.restype = None
    lib.gpumemprof_framework_self_check.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int]
    lib.gpumemprof_framework_self_check.restype = ctypes.c_int
    lib.gpumemprof_framework_oom.argtypes = [ctypes.c_int] + [ctypes.c_uint64] * 5
    lib.gpumemprof_framework_oom.restype = None
    return lib


def _version(text):
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else (0, 0, 0)


def _seed(torch):
    """Segments and live blocks that existed before the tracker: usually none, since the attach
    runs right after CUDA initialisation, before the program's first tensor. False if none."""
    segments = torch.cuda.memory_snapshot()
    for seg in segments:
        device, stream = int(seg.get("device", 0)), int(seg.get("stream", 0) or 0)
        address = int(seg["address"])
        op = _SEGMENT_MAP if seg.get("is_expandable") else _SEGMENT_ALLOC
        _shim.gpumemprof_framework_seed(op, device, address, int(seg["total_size"]), stream)
        offset = address
        for block in seg.get("blocks", ()):
            block_address = int(block.get("address", offset))
            offset = block_address + int(block["size"])
            state = block.get("state", "")
            if not state.startswith("active"):
                continue
            requested = int(block.get("requested_size", block["size"]))
            _shim.gpumemprof_framework_seed(_TENSOR_ALLOC, device, block_address, requested, stream)
            if state != "active_allocated":
                _shim.gpumemprof_framework_seed(_TENSOR_FREE_REQUESTED, device, block_address, requested, stream)
    return bool(segments)


def _self_check(torch, cache_was_empty):
    """A tensor of an unusual size must arrive through the tracker exactly, or the shim detaches.
    When PyTorch held nothing before, the probe's traces in its cache and counters are undone, so
    the program sees the figures it would see without us."""
    device = torch.cuda.current_device()
    size = 4093 + 2 * (os.getpid() % 97)
    probe = torch.empty(size, dtype=torch.uint8, device=device)
    try:
        return _shim.gpumemprof_framework_self_check(probe.data_ptr(), size, device) == 1
    finally:
        del probe
        if cache_was_empty:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
            torch.cuda.reset_accumulated_memory_stats(device)


def _on_oom(device, requested, capacity, free_bytes):
    """PyTorch's OOM observer: called after it released its lock, before it raises."""
    try:
        import torch

        _categories.label_all()  # the categories at the OOM, before its bundle
        stats = torch.cuda.memory_stats(device)
        _shim.gpumemprof_framework_oom(
            int(device), int(requested), int(capacity), int(free_bytes),
            int(stats.get("allocated_bytes.all.current", 0)), int(stats.get("reserved_bytes.all.current", 0)))
    except Exception:
        pass


def _attach():
    attached = False
    try:
        import torch

        major, minor, patch = _version(getattr(torch, "__version__", ""))
        backend = str(torch.cuda.get_allocator_backend())
        if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "") not in ("", "0"):
            backend = "uncached"  # every tensor is a cudaMalloc: the trackers are never called
        if _shim.gpumemprof_framework_attach(major, minor, patch, backend.encode()) != 0:
            _categories.disable()
            return
        attached = True
        had_memory = _seed(torch)
        if _self_check(torch, not had_memory):
            torch._C._cuda_attach_out_of_memory_observer(_on_oom)
            _categories.attach(torch, _shim)
        else:
            _categories.disable()
    except Exception:
        _categories.disable()
        if attached:  # half set up (a seed or the probe failed): detach rather than record on
            try:
                _shim.gpumemprof_framework_self_check(0, 0, -1)
            except Exception:
                pass


def _torch_imported(torch):
    _categories.install_registry(torch)
    try:
        torch.cuda._lazy_call(_attach)
    except Exception:
        pass


class _TorchImportHook:
    """A meta-path finder that wraps the loader of every spec found for torch until one of them
    has run: a probe such as importlib.util.find_spec("torch") (transformers makes one before it
    imports torch) must not use the hook up."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or "torch" in sys.modules:
            return None
        import importlib.util

        sys.meta_path.remove(self)  # the other finders find the real spec
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
            run(module)
            _torch_imported(module)

        loader.exec_module = exec_module
        return spec


def install():
    global _shim
    if _shim is not None:
        return
    _shim = _load_shim()
    if _shim is None:
        return
    if "torch" in sys.modules:  # imported before us (a .pth file): queue at once
        _torch_imported(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook())
