"""A third-party model for scripts/gpu_check.py: a HF transformers Llama built from a config (no
download), trained with AdamW under bf16 autocast, through `gpumemprof run` (so the framework
bridge attaches through the Python bootstrap). Writes PyTorch's own figures as ground truth
(torch_truth), which compare.py holds the tensor-level and framework-reserved figures to.

    llama_train.py          train 3 x 5 steps, then the ground truth
    llama_train.py --oom    train a few steps, then ask for more than the device has, uncaught:
                            the process ends with PyTorch's OutOfMemoryError and its message, which
                            compare.py holds the OOM bundle's figures to
"""
import os
import sys

# First, as HF scripts do: transformers probes for torch (importlib.util.find_spec) before torch is
# imported, which the bridge's import hook must survive.
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_truth import record  # noqa: E402


def build(torch):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
    model = LlamaForCausalLM(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, optimizer, config


def step(torch, model, optimizer, batch):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=batch, labels=batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def train(torch, out):
    model, optimizer, config = build(torch)
    batch = torch.randint(0, config.vocab_size, (8, 512), device="cuda")
    for _ in range(15):
        step(torch, model, optimizer, batch)
    torch.cuda.synchronize()
    out["parameters"] = sum(p.numel() for p in model.parameters())
    out["total_memory"] = torch.cuda.get_device_properties(0).total_memory
    return model, optimizer


def oom():
    import torch

    model, optimizer, config = build(torch)
    batch = torch.randint(0, config.vocab_size, (8, 512), device="cuda")
    for _ in range(3):
        step(torch, model, optimizer, batch)
    torch.cuda.synchronize()
    total = torch.cuda.get_device_properties(0).total_memory
    huge = torch.empty(total, dtype=torch.uint8, device="cuda")  # cannot fit: raises, uncaught
    return huge


if __name__ == "__main__":
    if sys.argv[1:] == ["--oom"]:
        oom()
        sys.exit(0)
    sys.exit(record("llama", train))
