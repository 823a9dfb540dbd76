"""torch.nn.Parameter: a tensor on the same storage as its data (no allocation, one free when the
last of them dies), requiring grad."""
from .._tensor import Tensor


class Parameter(Tensor):
    def __init__(self, data=None, requires_grad=True):
        if data is None:
            raise ValueError("this fake torch has no empty tensors: give Parameter its data")
        super().__init__(data.untyped_storage(), data._offset, data.nbytes)
        self.requires_grad = requires_grad

    @property
    def data(self):
        return Tensor(self._storage, self._offset, self._nbytes)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Buffer(Tensor):
    """torch.nn.Buffer: assigned to a module attribute, registers a buffer."""

    def __init__(self, data, *, persistent=True):
        super().__init__(data.untyped_storage(), data._offset, data.nbytes)
        self.persistent = persistent
