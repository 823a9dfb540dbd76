from .container import ModuleList, Sequential  # noqa: F401
from .linear import Linear  # noqa: F401
from .module import Module  # noqa: F401
