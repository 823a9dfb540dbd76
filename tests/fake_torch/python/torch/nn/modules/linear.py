"""A fake torch.nn.Linear over byte tensors: weight in_features*out_features bytes, bias
out_features. An input of N bytes is a batch of N // in_features rows. Its forward allocates, for
a batch of B rows, a workspace of B*out_features (a temporary, freed before it returns), the
pre-activation h (B*out_features, saved for backward with the input: an activation) and the output
(B*out_features). Its backward node allocates the input's gradient (a temporary)."""
import torch

from ..autograd_ops import linear
from ..parameter import Parameter
from .module import Module


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device="cuda"):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(torch.empty(in_features * out_features, device=device))
        if bias:
            self.bias = Parameter(torch.empty(out_features, device=device))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return linear(x, self.weight, self.bias, self.in_features, self.out_features)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"
