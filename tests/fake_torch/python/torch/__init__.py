"""A fake of the few parts of PyTorch that gpumemprof's bootstrap and its tests use
(tests/fake_torch/README.md), over the fake libc10_cuda.so in lib/. Importing it loads that
library, as `import torch` does, and touches no GPU."""
import os

__version__ = os.environ.get("FAKE_TORCH_VERSION", "2.11.0")

from . import _C  # noqa: E402
from . import cuda  # noqa: E402
from ._C import OutOfMemoryError  # noqa: E402
from ._tensor import Tensor, empty, uint8  # noqa: E402

__all__ = ["OutOfMemoryError", "Tensor", "cuda", "empty", "uint8"]
