"""torch.utils: hooks (RemovableHandle) and checkpoint."""
from . import checkpoint, hooks  # noqa: F401
