"""torch.optim: Optimizer (optimizer.py, with the global step hooks), AdamW and SGD."""
from . import optimizer  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
