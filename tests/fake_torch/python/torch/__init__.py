"""A fake of the few parts of PyTorch that gpumemprof's bootstrap and its tests use
(tests/fake_torch/README.md), over the fake libc10_cuda.so in lib/. Importing it loads that
library, as `import torch` does, and touches no GPU."""
import os

__version__ = os.environ.get("FAKE_TORCH_VERSION", "2.11.0")

from . import _C  # noqa: E402
from . import cuda  # noqa: E402
from ._C import OutOfMemoryError  # noqa: E402
from ._tensor import Tensor, UntypedStorage, empty, empty_like, is_tensor, uint8, zeros_like  # noqa: E402
from . import autograd  # noqa: E402
from .autograd.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from . import nn, optim, utils  # noqa: E402


def clone(t):
    return t.clone()


__all__ = ["OutOfMemoryError", "Tensor", "UntypedStorage", "autograd", "clone", "cuda", "empty", "empty_like",
           "enable_grad", "inference_mode", "is_grad_enabled", "is_tensor", "nn", "no_grad", "optim",
           "set_grad_enabled", "uint8", "utils", "zeros_like"]
