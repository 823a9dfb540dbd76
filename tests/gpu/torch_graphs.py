"""PyTorch CUDA graphs (torch.cuda.graph) for scripts/gpu_check.py, run once with the native caching
allocator (torch_graphs) and once with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
(torch_graphs_async), each without the profiler and then under it: the printed values must be
bit-identical.

Native allocator: a whole training step of an MLP captured as in PyTorch's CUDA graphs notes
(static input and target, warm-up on a side stream, zero_grad(set_to_none=True) before the capture,
SGD), replayed 20 times on new data; then its forward alone under no_grad in a second graph (its own
private pool), replayed 20 times. cudaMallocAsync: the forward graph only; its allocations are then
graph memory (PyTorch instantiates with auto free on launch).

Ground truth: torch_truth's counters, the driver's graph memory attributes, the private pools from
memory_snapshot (native), and the graphs: 2 or 1 captured in global mode, 20 launches each.
"""
import os

import torch_graph_truth

STEPS = 20


def workload(torch, out):
    native = torch.cuda.get_allocator_backend() == "native"
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 256)).to(dev)
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(256, 1024, device=dev), torch.randn(256, 256, device=dev)) for _ in range(STEPS)]
    static_input = torch.randn(256, 1024, device=dev)
    static_target = torch.randn(256, 256, device=dev)
    graphs = []
    torch_graph_truth.KEEP += [model, opt, data, static_input, static_target, graphs]

    if native:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(static_input), static_target).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        train = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(train):
            static_loss = loss_fn(model(static_input), static_target)
            static_loss.backward()
            opt.step()
        graphs.append((train, static_loss))
        for i, (x, y) in enumerate(data):
            static_input.copy_(x)
            static_target.copy_(y)
            train.replay()
            print(f"loss {i} {static_loss.item()!r}")

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_input)
        torch.cuda.current_stream().wait_stream(side)
        forward = torch.cuda.CUDAGraph()
        with torch.cuda.graph(forward):
            static_out = model(static_input).square().mean()
        graphs.append((forward, static_out))
        for i, (x, _) in enumerate(data):
            static_input.copy_(x)
            forward.replay()
            print(f"forward {i} {static_out.item()!r}")
    torch.cuda.synchronize()
    # Each graph: captured once in PyTorch's default mode (global), instantiated once, replayed on
    # the current stream STEPS times.
    out["graphs"] = [{"match": {"origin": "capture", "capture_mode": "global"},
                      "expect": {"launches": STEPS, "instantiations": 1, "streams": 1}} for _ in graphs]
    out["steps"] = STEPS


if __name__ == "__main__":
    torch_graph_truth.run(os.environ.get("GPU_CHECK_NAME", "torch_graphs"), workload)
