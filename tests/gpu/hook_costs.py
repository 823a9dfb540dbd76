"""The category hooks' pieces (shim/python_bootstrap/_gpumemprof_categories.py) timed directly, in
the state of a training loop: inference_bench.py's model (HF Llama, 8 layers) after 5 AdamW steps
with its gradients set. Run by hand on a GPU, under the profiler (the bootstrap must be loaded):

    gpumemprof run -o /tmp/runs -- python3 tests/gpu/hook_costs.py

Prints one JSON object: how many registrations counted as module changes in each forward (0: no
parameter walk is made due by the forward), and each piece's time per call in microseconds. A step
pays backward_pair, pre_hook and post_hook (and, every few seconds or after a module change, a
forced parameter walk)."""
import json
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

cat = sys.modules.get("_gpumemprof_categories")
if cat is None:
    sys.exit("hook_costs.py: run it under `gpumemprof run` (the bootstrap is not loaded)")
torch.manual_seed(0)
config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                     num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
model = LlamaForCausalLM(config).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
batch = torch.randint(0, 32000, (8, 256), device="cuda")
changes = []


def step():
    before = cat._module_changes
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=batch, labels=batch).loss
    changes.append(cat._module_changes - before)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


for _ in range(5):
    step()
# The gradients are set, as before an optimizer step.
with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = model(input_ids=batch, labels=batch).loss
loss.backward()


def t(fn, n=200):
    """Microseconds per call of fn, over n calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


out = {"module_changes_per_forward": changes, "params": len(cat._walk.params),
       "modules": len(cat._modules), "seen": len(cat._seen)}
out["storage_us"] = t(lambda: [cat._storage(p.grad) for p in model.parameters()])
out["label_gradients_trust_us"] = t(lambda: cat._label_gradients(True))
out["label_gradients_full_us"] = t(lambda: cat._label_gradients(False))
out["label_state_trust_us"] = t(lambda: cat._label_optimizer_state(opt, True))
out["label_state_full_us"] = t(lambda: cat._label_optimizer_state(opt, False))
out["label_parameters_check_us"] = t(lambda: cat._label_parameters())
out["label_parameters_forced_us"] = t(lambda: cat._label_parameters(force=True), 50)
out["phase_event_us"] = t(lambda: cat._phase_event(1))
out["pre_hook_us"] = t(lambda: cat._optimizer_step_begins(opt, (), {}))
out["post_hook_us"] = t(lambda: cat._optimizer_step_ends(opt, (), {}))
out["backward_pair_us"] = t(lambda: (cat._backward_begins(), cat._backward_ends()))
print(json.dumps(out))
