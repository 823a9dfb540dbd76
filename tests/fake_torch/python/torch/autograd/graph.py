"""The fake autograd graph and its engine.

A recorded operation gives its output a Node holding the tensors it saved for backward (which keeps
them alive: the activations), the nodes of its inputs (next_functions) and the leaves it feeds
(parameters: where gradients accumulate). The engine runs the nodes from the roots in reverse
topological order; each allocates the gradient for its inputs as a temporary (freed at once), the
.grad of each of its leaves the first time (later backward calls accumulate in place: no
allocation), and drops its saved tensors unless retain_graph. A node with `recompute` (a checkpoint)
first runs its function again, with grad enabled, and backward through that inner graph."""
import torch

from .grad_mode import is_grad_enabled


class Node:
    def __init__(self, name, next_functions, leaves, saved, grad_bytes, recompute=None):
        self._name, self.next_functions, self.leaves = name, next_functions, leaves
        self.saved_tensors, self.grad_bytes, self.recompute = saved, grad_bytes, recompute
        self.released = False

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name}>"


def record(output, name, inputs=(), params=(), saved=(), grad_bytes=(), recompute=None):
    """Records an operation that made `output` from `inputs` (tensors) and `params`, saving `saved`
    for backward; grad_bytes: the gradient tensors its backward allocates (and frees at once)."""
    tensors = [t for t in list(inputs) + list(params) if t is not None]
    if not is_grad_enabled() or not any(t.requires_grad for t in tensors):
        return output
    next_functions = [t.grad_fn for t in tensors if t.grad_fn is not None]
    leaves = [t for t in tensors if t.grad_fn is None and t.requires_grad]
    output.grad_fn = Node(name, next_functions, leaves, list(saved), list(grad_bytes), recompute)
    output.requires_grad = True
    return output


def _topological(roots):
    order, seen = [], set()

    def visit(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        for n in node.next_functions:
            visit(n)
        order.append(node)

    for root in roots:
        visit(root)
    return list(reversed(order))


class _Engine:
    """accumulate: into leaf.grad (torch.autograd.backward, restricted to `inputs` when given), or
    into new tensors returned for `inputs` (torch.autograd.grad)."""

    def __init__(self, retain_graph, inputs, into_grad):
        self.retain_graph, self.into_grad = retain_graph, into_grad
        self.inputs = None if inputs is None else list(inputs)
        self.results = {}  # id(input) -> gradient (torch.autograd.grad)

    def _wanted(self, leaf):
        return self.inputs is None or any(leaf is t for t in self.inputs)

    def accumulate(self, leaf):
        if not self._wanted(leaf):
            return
        if self.into_grad:
            if leaf.grad is None:
                leaf.grad = torch.empty(leaf.nbytes, device=leaf.device)
        elif id(leaf) not in self.results:
            self.results[id(leaf)] = torch.empty(leaf.nbytes, device=leaf.device)

    def run(self, roots):
        for node in _topological(roots):
            if node.released:
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access saved tensors "
                    "after they have already been freed). Specify retain_graph=True if you need to.")
            if node.recompute is not None:
                inner = node.recompute()
                if inner.grad_fn is not None:
                    self.run([inner.grad_fn])
                    inner.grad_fn = None
                del inner
            for nbytes in node.grad_bytes:
                tmp = torch.empty(nbytes, device=0)
                del tmp
            for leaf in node.leaves:
                self.accumulate(leaf)
            if not self.retain_graph:
                node.saved_tensors = []
                node.released = True
