"""torch.optim.AdamW: a parameter's first step allocates exp_avg and exp_avg_sq (its size each) and
a CPU step count; every step allocates a temporary of its size (the denominator) and frees it."""
import torch

from .optimizer import Optimizer


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0  # a CPU scalar (torch.tensor(0.0) on the CPU in PyTorch)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                denom = torch.empty_like(p)  # exp_avg_sq.sqrt() / bias_correction2 + eps
                del denom
        return loss
