"""Tensor memory categories (issue 33) on a real GPU, for scripts/gpu_check.py (torch_categories):
a HF transformers Llama built from a small config (no download), run through `gpumemprof run` so
that the bootstrap attaches through PYTHONPATH and labels the tensors. Writes PyTorch's own figures
and the categories' ground truth to $GROUND_TRUTH (torch_truth.record), which compare.py
(compare_categories) holds `gpumemprof report RUN --json`'s categories_at_peak and
categories_at_exit to.

    categories.py llama                 AdamW, bf16 autocast, 4 steps; the last step's gradients are
                                        not zeroed, so parameters, gradients and optimizer state are
                                        all live at exit
    (llama and ddp run the training loop as one GPUMemoryProfiler call: its peak and end by category,
    decided live by the collector, are compared with the report's split at the peak and the truth)
    categories.py ddp [--bucket-view]   the same model in DistributedDataParallel (world size 1,
                                        gloo, set up by this script); --bucket-view:
                                        gradient_as_bucket_view=True, the gradients are views into
                                        DDP's buckets (their storages are the buckets)
    categories.py generate              greedy model.generate (bf16, 32 new tokens, DynamicCache):
                                        the returned cache is live at exit

The figures of a category are unique storages (deduplicated by data pointer), in bytes: what the
caching allocator was asked for, as the profiler counts them. Everything the truth describes is kept
past the interpreter's end (keep(): a reference nobody drops, as native code would hold it), so it
is still allocated when the profiler takes its figures at exit.

stdout: the losses (repr) or the generated tokens' checksum, one line, identical with the category
hooks on and off (GPUMEMPROF_CATEGORIES=off: compare.py wants the same output and exit status).
"""
import ctypes
import os
import socket
import sys

# First, as HF scripts do: transformers probes for torch before torch is imported.
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_truth import record  # noqa: E402

STEPS = 4
BATCH, SEQ = 8, 512
NEW_TOKENS = 32
# The vocabulary is smaller than the MLP's width, so that the largest parameters are the layers'
# MLP weights (model.layers.N.mlp.*_proj.weight), not the embedding and the LM head.
VOCAB = 2048


def keep(*objects):
    """Held past the interpreter's end, as by native code: their tensors are live at exit."""
    for o in objects:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(o))


def build(torch, dtype=None):
    torch.manual_seed(0)
    # Eager attention: its backward has no atomics, so the losses are the same run after run (with
    # the category hooks on and off); SDPA's flash backward need not be.
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024,
                         attn_implementation="eager")
    model = LlamaForCausalLM(config)
    # One conversion per tensor (device and dtype at once): the parameters are allocated once.
    return model.to("cuda", dtype) if dtype is not None else model.cuda()


def storages(tensors):
    """{data pointer: bytes} of the unique storages of the CUDA tensors among `tensors`."""
    seen = {}
    for t in tensors:
        if t is None or not t.is_cuda:
            continue
        s = t.untyped_storage()
        seen.setdefault(s.data_ptr(), s.nbytes())
    return seen


def figure(seen):
    return {"bytes": sum(seen.values()), "count": len(seen)}


def largest_parameters(module, n=16):
    """The parameters and buffers of `module` by storage size, largest first: [{"name", "bytes"}]."""
    named = list(module.named_parameters()) + list(module.named_buffers())
    rows = [{"name": name, "bytes": t.untyped_storage().nbytes()} for name, t in named if t.is_cuda]
    return sorted(rows, key=lambda r: (-r["bytes"], r["name"]))[:n]


def module_truth(torch, out, module, optimizer):
    """parameters, gradients, optimizer_state as the categories define them, and the largest
    parameters with their names (those of `module`, the model inside any wrapper)."""
    params = list(module.parameters()) + list(module.buffers())
    out["parameters"] = figure(storages(params))
    out["gradients"] = figure(storages(p.grad for p in module.parameters()))
    out["parameter_tensors"] = sum(1 for p in module.parameters() if p.is_cuda)
    state = []
    if optimizer is not None:
        for per_param in optimizer.state.values():
            state += [v for v in per_param.values() if torch.is_tensor(v)]
    out["optimizer_state"] = figure(storages(state))
    out["largest_parameters"] = largest_parameters(module)


class PeakPhase:
    """Where PyTorch's requested-bytes peak was reached, from its own counter read at the end of
    each phase: the phase in which the peak last rose is the one that first reached its final value
    (the profiler reports the first time the peak was reached)."""

    def __init__(self, torch):
        self.torch, self.peak, self.phase = torch, 0, None

    def ended(self, kind, step):
        peak = self.torch.cuda.memory_stats(0).get("requested_bytes.all.peak", 0)
        if peak > self.peak:
            self.peak, self.phase = peak, {"kind": kind, "step": step}


def train(torch, model, optimizer, batch, peak):
    """STEPS optimizer steps of one micro-batch each; the last step's gradients stay. Returns the
    losses. The phases are the categories' own: forward (outside backward and the optimizer's step),
    backward (inside loss.backward()), optimizer (inside optimizer.step()); step = completed steps + 1."""
    losses = []
    for i in range(STEPS):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            # No KV cache in training (it would be built and dropped by every forward).
            loss = model(input_ids=batch, labels=batch, use_cache=False).loss
        peak.ended("forward", i + 1)
        loss.backward()
        peak.ended("backward", i + 1)
        optimizer.step()
        peak.ended("optimizer", i + 1)
        losses.append(loss.item())
        if i < STEPS - 1:
            optimizer.zero_grad(set_to_none=True)
    return losses


def profiled(out, fn):
    """fn() as one call of the Python package's GPUMemoryProfiler (on PYTHONPATH under `gpumemprof
    run`): its peak and end by category, as the collector decided them live, go to out["live"]."""
    import gpumemprof
    profiler = gpumemprof.GPUMemoryProfiler(device=0)
    with profiler.profile_context("train"):
        result = fn()
    r = profiler.results[-1]
    out["live"] = {"peak": r.memory_peak.allocated_memory, "peak_by_category": r.memory_peak.allocated_by_category,
                   "after": r.memory_after.allocated_memory,
                   "after_by_category": r.memory_after.allocated_by_category}
    return result


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scenario_llama(torch, out):
    model = build(torch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
    peak = PeakPhase(torch)
    losses = profiled(out, lambda: train(torch, model, optimizer, batch, peak))
    torch.cuda.synchronize()
    module_truth(torch, out, model, optimizer)
    out["kv_cache"] = {"bytes": 0, "count": 0}
    out["peak_phase"] = peak.phase
    out["losses"] = losses
    print("losses", " ".join(repr(x) for x in losses), flush=True)
    keep(model, optimizer)


def scenario_ddp(torch, out, bucket_view):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    # World size 1, set up here (not through torchrun): one process, one run directory.
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1",
                      LOCAL_RANK="0")
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", rank=0, world_size=1)
    model = build(torch)
    # broadcast_buffers=False: the only buffer is the rotary embedding's inv_freq, the same on every
    # rank; nothing to send each forward.
    ddp = DDP(model, gradient_as_bucket_view=bucket_view, broadcast_buffers=False)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    batch = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
    peak = PeakPhase(torch)
    losses = profiled(out, lambda: train(torch, ddp, optimizer, batch, peak))
    torch.cuda.synchronize()
    # The truth is the model's own (names without DDP's "module." prefix): with bucket views the
    # gradients' unique storages are DDP's buckets.
    module_truth(torch, out, model, optimizer)
    out["kv_cache"] = {"bytes": 0, "count": 0}
    out["gradient_as_bucket_view"] = bucket_view
    out["peak_phase"] = peak.phase
    out["losses"] = losses
    print("losses", " ".join(repr(x) for x in losses), flush=True)
    dist.destroy_process_group()
    keep(ddp, model, optimizer)


def cache_tensors(cache):
    """The key and value tensors of a generate's past_key_values, and which API gave them, across
    transformers versions: DynamicCache.layers[i].keys/values (4.56 on, 5.x), else
    DynamicCache.key_cache/value_cache (earlier), else the legacy tuple of (key, value) per layer
    (iterating a cache gives the same)."""
    layers = getattr(cache, "layers", None)
    if isinstance(layers, (list, tuple)) and layers and hasattr(layers[0], "keys"):
        return [t for layer in layers for t in (getattr(layer, "keys", None), getattr(layer, "values", None))], "layers"
    keys, values = getattr(cache, "key_cache", None), getattr(cache, "value_cache", None)
    if isinstance(keys, (list, tuple)) and isinstance(values, (list, tuple)):
        return list(keys) + list(values), "key_cache"
    found = []
    for entry in cache:
        found += [t for t in (entry if isinstance(entry, (list, tuple)) else [entry]) if hasattr(t, "is_cuda")]
    return found, "iterate"


def scenario_generate(torch, out):
    model = build(torch, torch.bfloat16).eval()
    prompt = torch.randint(0, VOCAB, (BATCH, 32), device="cuda")
    # min_new_tokens: exactly NEW_TOKENS tokens, whatever the random model predicts.
    output = model.generate(prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                            use_cache=True, return_dict_in_generate=True, pad_token_id=0)
    torch.cuda.synchronize()
    module_truth(torch, out, model, None)
    cache = output.past_key_values
    tensors, api = cache_tensors(cache)
    out["kv_cache"] = figure(storages(tensors))
    out["cache"] = {"class": type(cache).__name__, "api": api, "tensors": len(tensors)}
    out["peak_phase"] = {"kind": "forward", "step": 1}  # no backward, no optimizer step
    out["sequences"] = list(output.sequences.shape)
    checksum = int(output.sequences.sum().item())
    print("generated", list(output.sequences.shape), "checksum", checksum, flush=True)
    keep(model, output, cache)


def finish(torch, out):
    st = out.get("stats", {})
    out["requested_current"] = st.get("requested_bytes.all.current")
    out["requested_peak"] = st.get("requested_bytes.all.peak")
    out["device"] = 0
    # Whether the hooks were on: off makes every tensor "unknown" (compare.py judges that instead).
    out["categories_setting"] = os.environ.get("GPUMEMPROF_CATEGORIES", "")


def main(argv):
    scenario = argv[1] if len(argv) > 1 else ""
    bodies = {"llama": scenario_llama, "generate": scenario_generate,
              "ddp": lambda torch, out: scenario_ddp(torch, out, "--bucket-view" in argv)}
    if scenario not in bodies:
        print(f"usage: categories.py {{{'|'.join(bodies)}}} [--bucket-view]", file=sys.stderr)
        return 2

    def body(torch, out):
        out["scenario"] = scenario
        return bodies[scenario](torch, out)

    return record("categories_" + scenario, body, finish)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
