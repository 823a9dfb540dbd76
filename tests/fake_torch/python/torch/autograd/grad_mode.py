"""torch.no_grad / torch.enable_grad / torch.is_grad_enabled: whether operations record a graph."""
import functools
import threading

_tls = threading.local()


def is_grad_enabled():
    return getattr(_tls, "enabled", True)


def _set(mode):
    _tls.enabled = mode


class _GradMode:
    mode = True

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(self.mode)
        return self

    def __exit__(self, *exc):
        _set(self.prev)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    mode = False


class enable_grad(_GradMode):
    mode = True


inference_mode = no_grad


class set_grad_enabled(_GradMode):
    def __init__(self, mode):
        self.mode = mode
        self.prev = is_grad_enabled()
        _set(mode)  # as PyTorch: also works as a plain call

    def __enter__(self):
        return self
