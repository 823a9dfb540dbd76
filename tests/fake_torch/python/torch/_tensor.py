"""torch.empty of bytes on a CUDA device; the block goes back to the cache when the tensor dies."""
from . import _C, cuda


class dtype:
    def __init__(self, name, itemsize):
        self.name, self.itemsize = name, itemsize


uint8 = dtype("uint8", 1)


def _device_index(device):
    if isinstance(device, int):
        return device
    if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        return int(device[5:]) if ":" in device else cuda.current_device()
    raise ValueError(f"this fake torch only has CUDA tensors, not {device!r}")


class Tensor:
    def __init__(self, ptr, nbytes, device):
        self._ptr, self._nbytes, self.device = ptr, nbytes, device

    def data_ptr(self):
        return self._ptr

    def record_stream(self, stream):
        """Used on `stream` too: its free completes only once that work is done."""
        _C._lib.fake_torch_record_stream(self._ptr)

    def __del__(self):
        _C._lib.fake_torch_free(self._ptr)


def empty(size, dtype=uint8, device=None):
    index = _device_index(device)
    cuda._lazy_init()
    nbytes = size * dtype.itemsize
    ptr = _C._lib.fake_torch_malloc(nbytes, index)
    if ptr == 0:
        _C._raise_oom()
    return Tensor(ptr, nbytes, index)
