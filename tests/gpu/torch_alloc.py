"""PyTorch workload for scripts/gpu_check.py: a few MLP training steps, a small convolution
(cuDNN), tensor churn with an empty_cache() in the middle, then PyTorch's own memory figures as
ground truth in $GROUND_TRUTH. Run once per allocator setting (PYTORCH_CUDA_ALLOC_CONF unset,
expandable_segments:True, backend:cudaMallocAsync).

Nothing allocates after the figures are read, and the interpreter then exits normally (never
os._exit) so the shim writes summary.json from its atexit path.
"""
import ctypes
import sys

import torch_truth


def pool_attributes():
    """The default pool's attributes read from the driver through the process's own libcudart,
    the same pool PyTorch's cudaMallocAsync backend uses (cudaDeviceGetDefaultMemPool)."""
    path = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcudart.so" in line:
                path = line.split()[-1]
                break
    if path is None:
        return {"source": "libcudart not mapped"}
    rt = ctypes.CDLL(path)
    pool = ctypes.c_void_p()
    if rt.cudaDeviceGetDefaultMemPool(ctypes.byref(pool), 0) != 0:
        return {"source": path, "error": "cudaDeviceGetDefaultMemPool failed"}
    out = {"source": path}
    # cudaMemPoolAttr: ReservedMemCurrent 5, ReservedMemHigh 6, UsedMemCurrent 7, UsedMemHigh 8.
    for name, attr in (("reserved_current", 5), ("reserved_high", 6),
                       ("used_current", 7), ("used_high", 8)):
        v = ctypes.c_uint64()
        if rt.cudaMemPoolGetAttribute(pool, attr, ctypes.byref(v)) == 0:
            out[name] = v.value
    return out


def workload(torch):
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    # Training: 4 x (2048 x 2048) linear layers, batch 512, AdamW; touches cuBLAS.
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(512, 2048, device=dev)
    y = torch.randn(512, 2048, device=dev)
    for _ in range(5):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    # A small convolution: cuDNN handle and workspace.
    conv = torch.nn.Conv2d(16, 32, 3, padding=1).to(dev)
    conv(torch.randn(8, 16, 64, 64, device=dev)).sum().backward()
    # Churn: many sizes (small and large pools), some kept, a big transient, empty_cache()
    # (segments go back to the driver), then regrowth.
    kept = []
    for i in range(300):
        t = torch.empty((1 + (i * 7919) % 4096) * 256, dtype=torch.uint8, device=dev)
        if i % 3 == 0:
            kept.append(t)
    big = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    del big
    del kept[::2]
    torch.cuda.empty_cache()
    more = [torch.empty(n << 20, dtype=torch.uint8, device=dev) for n in (1, 3, 7, 20, 65)]
    torch.cuda.synchronize()
    return model, opt, kept, more


def finish(torch, out):
    out["total_memory"] = torch.cuda.get_device_properties(0).total_memory
    if out["backend"] == "cudaMallocAsync":
        out["pool"] = pool_attributes()


def main():
    return torch_truth.record("torch", lambda torch, out: workload(torch), finish)


if __name__ == "__main__":
    sys.exit(main())
