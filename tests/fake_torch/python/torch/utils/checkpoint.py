"""torch.utils.checkpoint.checkpoint: the forward keeps no activations of `function` (it runs
without grad, so its temporaries and intermediates die at once) and saves only its inputs; the
backward runs `function` again (the recompute: its activations are allocated again, inside the
backward, then freed) and backward through that. As use_reentrant=False, the recompute happens
inside the outer backward, not in a nested torch.autograd.backward call."""
import torch

from ..autograd import graph
from ..autograd.grad_mode import enable_grad, no_grad


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    with no_grad():
        out = function(*args, **kwargs)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]

    def recompute():
        detached = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
        with enable_grad():
            return function(*detached, **kwargs)

    if not graph.is_grad_enabled():
        return out
    # As the non-reentrant checkpoint, whose output has a grad_fn whatever the inputs: the node holds
    # the inputs (saved) and reaches the parameters through the recomputed graph.
    out.grad_fn = graph.Node("CheckpointFunctionBackward", [t.grad_fn for t in tensors if t.grad_fn is not None],
                             [t for t in tensors if t.grad_fn is None and t.requires_grad], tensors, [],
                             recompute)
    out.requires_grad = True
    return out
