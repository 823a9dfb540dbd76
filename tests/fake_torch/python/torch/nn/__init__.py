"""torch.nn: Module (with PyTorch's global registration hooks), Parameter, and a fake Linear."""
from . import modules  # noqa: F401
from . import parameter  # noqa: F401
from .modules import Linear, Module, ModuleList, Sequential  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
