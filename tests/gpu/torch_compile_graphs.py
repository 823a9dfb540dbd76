"""torch.compile(mode="reduce-overhead") for scripts/gpu_check.py: CUDA graph trees on a tiny model,
trained 10 steps (the loss inside the compiled function, backward and SGD outside), without the
profiler and then under it: the printed losses must be bit-identical. The model is tiny so that
inductor's compilation stays short on a fresh machine; compilation runs in this process
(TORCHINDUCTOR_COMPILE_THREADS=1: no pool of compile workers to start).

Ground truth: torch_truth's counters, the driver's graph memory attributes, the private pool of the
graph trees from memory_snapshot. How many graphs the trees record and replay is PyTorch's business:
shown, not judged.
"""
import os

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch_graph_truth  # noqa: E402

STEPS = 10


def workload(torch, out):
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = [(torch.randn(32, 64, device=dev), torch.randn(32, 64, device=dev)) for _ in range(STEPS)]
    torch_graph_truth.KEEP += [model, opt, data]

    def loss_of(x, y):
        return torch.nn.functional.mse_loss(model(x), y)

    step = torch.compile(loss_of, mode="reduce-overhead")
    torch_graph_truth.KEEP.append(step)
    for i, (x, y) in enumerate(data):
        # A new iteration: the trees may overwrite the previous step's outputs from here on.
        torch.compiler.cudagraph_mark_step_begin()
        loss = step(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"loss {i} {loss.item()!r}")
    torch.cuda.synchronize()
    out["steps"] = STEPS


if __name__ == "__main__":
    torch_graph_truth.run(os.environ.get("GPU_CHECK_NAME", "torch_compile_graphs"), workload)
