"""torch.nn.Sequential and ModuleList: children named "0", "1", ..."""
from .module import Module


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def __iter__(self):
        return iter(self._modules.values())

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def forward(self, x):
        for m in self:
            x = m(x)
        return x


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __iter__(self):
        return iter(self._modules.values())

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        # A slice is a new ModuleList of the same modules, as in PyTorch (registering each again).
        if isinstance(i, slice):
            return self.__class__(list(self._modules.values())[i])
        return list(self._modules.values())[i]
