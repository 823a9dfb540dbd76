"""torch.empty of bytes on a CUDA device. A tensor is a view of an untyped storage (one block of
the caching allocator); the block goes back to the cache when the storage's last user dies (a
tensor, its views, a Parameter made from it)."""
import torch

from . import _C, _truth, cuda


class dtype:
    def __init__(self, name, itemsize):
        self.name, self.itemsize = name, itemsize

    def __repr__(self):
        return "torch." + self.name


uint8 = dtype("uint8", 1)


def _device_index(device):
    if isinstance(device, int):
        return device
    if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        return int(device[5:]) if ":" in device else cuda.current_device()
    raise ValueError(f"this fake torch only has CUDA tensors, not {device!r}")


class UntypedStorage:
    """One block of the caching allocator, freed once, when the last tensor on it dies."""

    def __init__(self, nbytes, device):
        self._ptr = 0
        cuda._lazy_init()
        ptr = _C._lib.fake_torch_malloc(nbytes, device)
        if ptr == 0:
            _C._raise_oom()
        self._ptr, self._nbytes, self.device = ptr, nbytes, device
        self._rid = _truth.allocated(nbytes)

    def data_ptr(self):
        return self._ptr

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    def __del__(self):
        if self._ptr:
            _C._lib.fake_torch_free(self._ptr)
            _truth.freed(self._rid)


class Tensor:
    """A 1-D uint8 CUDA tensor: `nbytes` bytes at `offset` in `storage`. Weak-referenceable and
    hashed by identity, as torch.Tensor."""

    is_cuda = True
    dtype = uint8

    def __init__(self, storage, offset=0, nbytes=None):
        self._storage, self._offset = storage, offset
        self._nbytes = storage.nbytes() - offset if nbytes is None else nbytes
        self.device = storage.device
        self._grad = None
        self.requires_grad = False
        self.grad_fn = None  # a torch.autograd.graph.Node for the result of a recorded operation

    # --- storage and sizes
    def data_ptr(self):
        return self._storage.data_ptr() + self._offset

    def untyped_storage(self):
        return self._storage

    def get_device(self):
        return self.device

    @property
    def nbytes(self):
        return self._nbytes

    @property
    def shape(self):
        return (self._nbytes,)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        return self._nbytes

    def element_size(self):
        return 1

    def dim(self):
        return 1

    def __len__(self):
        return self._nbytes

    def __getitem__(self, index):
        """A slice is a view on the same storage (no allocation)."""
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("this fake torch only slices tensors with a plain slice")
        start, stop, _ = index.indices(self._nbytes)
        return Tensor(self._storage, self._offset + start, max(0, stop - start))

    def detach(self):
        return Tensor(self._storage, self._offset, self._nbytes)

    def clone(self):
        return empty(self._nbytes, device=self.device)

    def record_stream(self, stream):
        """Used on `stream` too: its free completes only once that work is done."""
        _C._lib.fake_torch_record_stream(self._storage.data_ptr())

    # --- autograd
    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            _truth.mark(value._storage, "gradients")
        self._grad = value

    @property
    def is_leaf(self):
        return self.grad_fn is None

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        # As torch/_tensor.py: through the module attribute, looked up now.
        torch.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def sum(self):
        """A 4-byte scalar (float32), the usual loss; its backward expands the gradient back."""
        from .autograd import graph
        out = empty(4, device=self.device)
        graph.record(out, "SumBackward0", inputs=[self], grad_bytes=[self._nbytes])
        return out

    def __repr__(self):
        return f"tensor(<{self._nbytes} bytes at {self.data_ptr():#x}>, device='cuda:{self.device}')"


def empty(size, dtype=uint8, device=None, requires_grad=False):
    nbytes = (size[0] if isinstance(size, (tuple, list)) else size) * dtype.itemsize
    t = Tensor(UntypedStorage(nbytes, _device_index(device)))
    t.requires_grad = requires_grad
    return t


def empty_like(t):
    return empty(t.nbytes, device=t.device)


zeros_like = empty_like  # the fake has no values: zeroing writes nothing


def is_tensor(obj):
    return isinstance(obj, Tensor)
