"""torch.utils.hooks.RemovableHandle, as PyTorch's: removes its hook from the dicts it was put in."""
import weakref


class RemovableHandle:
    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if extra_dict is not None:
            dicts = extra_dict if isinstance(extra_dict, list) else [extra_dict]
            self.extra_dict_ref = tuple(weakref.ref(d) for d in dicts)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
