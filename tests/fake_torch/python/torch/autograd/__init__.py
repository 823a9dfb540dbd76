"""torch.autograd: backward and grad over the fake graph (graph.py), with their PyTorch signatures.
Both run in the ledger's "backward" phase (torch/_truth.py)."""
import torch

from .. import _truth
from . import graph  # noqa: F401
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .graph import _Engine


def _as_list(tensors):
    if tensors is None:
        return None
    return [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)


def _roots(outputs):
    roots = []
    for i, t in enumerate(outputs):
        if t.grad_fn is None and not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if t.grad_fn is not None:
            roots.append(t.grad_fn)
    return roots


def _run(outputs, grad_outputs, retain_graph, inputs, into_grad, finish=None):
    """The gradients of the outputs (ones, as _make_grads does, unless given) live through the run;
    finish(engine), when given, runs still in the backward phase."""
    outputs = _as_list(outputs)
    grad_outputs = _as_list(grad_outputs)
    _truth.backward_begin()
    try:
        ones = [torch.empty(t.nbytes, device=t.device) for t in outputs] if grad_outputs is None else []
        engine = _Engine(retain_graph, inputs, into_grad)
        engine.run(_roots(outputs))
        del ones
        return finish(engine) if finish is not None else None
    finally:
        _truth.backward_end()


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    if grad_variables is not None:
        grad_tensors = grad_variables
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_list(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _run(tensors, grad_tensors, retain_graph, inputs, into_grad=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """New gradient tensors for `inputs` (leaves here), .grad left alone."""
    if allow_unused is None:
        allow_unused = materialize_grads
    inputs = _as_list(inputs)
    if retain_graph is None:
        retain_graph = create_graph

    def finish(engine):
        result = []
        for t in inputs:
            g = engine.results.pop(id(t), None)
            if g is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            if g is None and materialize_grads:
                g = torch.empty(t.nbytes, device=t.device)
            result.append(g)
        return tuple(result)

    return _run(outputs, grad_outputs, retain_graph, inputs, into_grad=False, finish=finish)
