"""torch.optim.SGD: with momentum, a parameter's first step allocates its momentum_buffer (a clone of
its gradient); nothing else is allocated."""
import torch

from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov))

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None or group["momentum"] == 0:
                    continue
                state = self.state[p]
                if state.get("momentum_buffer") is None:
                    state["momentum_buffer"] = torch.clone(p.grad).detach()
        return loss
