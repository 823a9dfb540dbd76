"""The fake operations behind torch.nn's modules (torch.nn.functional would hold them)."""
import torch

from ..autograd import graph


def linear(x, weight, bias, in_features, out_features):
    rows = x.nbytes // in_features
    workspace = torch.empty(rows * out_features, device=x.device)
    h = torch.empty(rows * out_features, device=x.device)
    del workspace
    y = torch.empty(rows * out_features, device=x.device)
    return graph.record(y, "AddmmBackward0", inputs=[x], params=[weight, bias], saved=[x, h],
                        grad_bytes=[x.nbytes])
