"""Training and inference programs on the fake torch for the memory-category tests: parameters,
gradients, optimizer state, activations, temporaries and KV cache. `python category_workload.py
SCENARIO`; the last line of stdout is a JSON object with the exact ground truth, from the fake's own
ledger (torch/_truth.py, README.md "Memory categories"): the bytes by category live at exit, the
peak (its phase, step, micro-batch and bytes by category), the bytes of each named parameter and
buffer, and torch.cuda.memory_stats(0)."""
import ctypes
import gc
import importlib.util
import json
import sys

# Probe before importing, as transformers does: the bootstrap's import hook must survive it.
importlib.util.find_spec("torch")
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
EXTRA = {}  # a scenario's own facts, printed with the ledger


def keep(*objects):
    """Held past the interpreter's end, as by native code: their tensors are the ones live at exit."""
    for o in objects:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(o))


class Model(nn.Module):
    """Three fake Linear layers (weights of 1 MiB, 3 MiB and 768 KiB, biases of 1024, 3072 and 256
    bytes) and a 64 KiB buffer. checkpointed: the middle layer runs under checkpoint."""

    def __init__(self, checkpointed=False, sliced=False):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(1024, 1024), nn.Linear(1024, 3072), nn.Linear(3072, 256)])
        self.register_buffer("position_ids", torch.empty(64 * KiB, device="cuda"))
        self.checkpointed = checkpointed
        self.sliced = sliced

    def forward(self, x):
        # sliced: the layers through a slice of the ModuleList, as Hugging Face's models loop over
        # self.layers[: config.num_hidden_layers] (a new ModuleList every forward).
        for i, layer in enumerate(self.layers[: len(self.layers)] if self.sliced else self.layers):
            x = checkpoint(layer, x, use_reentrant=False) if self.checkpointed and i == 1 else layer(x)
        return x.sum()


def batch(rows):
    return torch.empty(rows * 1024, device="cuda")  # rows of the first layer's 1024 inputs


def adamw():
    """3 steps, the batch growing (256, 384, 512 rows) so the peak is one moment: step 3's backward.
    The last step's gradients are not zeroed; its input and loss stay (activations at exit)."""
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(3):
        x = batch(256 + 128 * step)
        loss = model(x)
        loss.backward()
        optimizer.step()
        if step < 2:
            optimizer.zero_grad(set_to_none=True)
    return model, [model, optimizer, x, loss]


def sgd_accumulate():
    """SGD with momentum, 2 steps of 2 micro-batches (sizes growing), zero_grad after each step."""
    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(2):
        for micro in range(2):
            x = batch(256 + 128 * (2 * step + micro))
            loss = model(x)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    del x, loss
    return model, [model, optimizer]


def checkpointed():
    """AdamW, 2 steps, the middle layer under checkpoint (its activations recomputed in backward)."""
    model = Model(checkpointed=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(2):
        x = batch(512 + 128 * step)
        loss = model(x)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    del x, loss
    return model, [model, optimizer]


class Decoder(nn.Module):
    """Two fake Linear layers for generation; each step's hidden state makes a key and a value of
    kv_bytes per layer, appended to the cache."""

    def __init__(self, kv_bytes=64 * KiB):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(1024, 1024), nn.Linear(1024, 1024)])
        self.kv_bytes = kv_bytes

    def forward(self, x, cache):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            key = torch.empty(self.kv_bytes, device="cuda")  # k_proj(x)
            value = torch.empty(self.kv_bytes, device="cuda")  # v_proj(x)
            cache.update(key, value, i)
            del key, value
        return x


def generate(model, steps, cache):
    """Greedy decoding: one forward per step over the last token's row; returns the last logits."""
    logits = None
    with torch.no_grad():
        for _ in range(steps):
            token = batch(1) if logits is None else logits[: 1024]
            logits = model(token, cache)
            del token
    return logits


def generate_scenario():
    """No training: 4 steps of generation with a DynamicCache of 2 layers; the last logits stay
    (other at exit)."""
    from transformers.cache_utils import DynamicCache

    model = Decoder()
    cache = DynamicCache()
    logits = generate(model, 4, cache)
    return model, [model, cache, logits]


def inference_plain():
    """Parameters and temporaries only: 3 forwards without grad, nothing kept."""
    model = Model()
    with torch.no_grad():
        for rows in (256, 512, 384):
            x = batch(rows)
            model(x)
            del x
    return model, [model]


def oom_forward():
    """A training step, then step 2's forward asks for more than the device has (caught)."""
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(2):
        optimizer.zero_grad(set_to_none=True)
        x = batch(256)
        if step == 1:
            try:
                model.layers[0](x)  # fine: a layer's activations
                torch.empty(1 << 40, device="cuda")  # a 1 TiB attention matrix: out of memory
            except torch.OutOfMemoryError as e:
                print("caught:", e)
            break
        loss = model(x)
        loss.backward()
        optimizer.step()
    del loss
    return model, [model, optimizer, x]


def sliced_layers():
    """AdamW, 2 steps, the layers looped over through a slice (a ModuleList made in every forward).
    Registering known modules again must not make the bootstrap's parameter walk due: the module
    changes it counts during the forwards go to EXTRA."""
    categories = sys.modules["_gpumemprof_categories"]
    model = Model(sliced=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    changes = 0
    for step in range(2):
        x = batch(256 + 128 * step)
        before = categories._module_changes
        loss = model(x)
        changes += categories._module_changes - before
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    EXTRA["module_changes_in_forwards"] = changes
    del x, loss
    return model, [model, optimizer]


def adamw_hooks_inactive():
    """adamw with the bootstrap's hooks switched off by the benchmarks' switch (set_active(False),
    tests/gpu/inference_bench.py --alternate hooks) from the start: nothing labelled, no phase."""
    sys.modules["_gpumemprof_categories"].set_active(False)
    return adamw()


def report(name, model):
    gc.collect()
    truth = torch._truth.summary()
    stats = torch.cuda.memory_stats(0)
    # The ledger and the allocator must agree (every tensor comes from torch.empty).
    assert sum(truth["at_exit"].values()) == stats["requested_bytes.all.current"], (truth, stats)
    assert truth["peak"]["bytes"] == stats["requested_bytes.all.peak"], (truth, stats)
    names = {n: t.nbytes for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    print(json.dumps({"scenario": name, "at_exit": truth["at_exit"], "peak": truth["peak"], "names": names,
                      "stats": stats, **EXTRA}), flush=True)


if __name__ == "__main__":
    scenario = sys.argv[1]
    run = {"adamw": adamw, "sgd_accumulate": sgd_accumulate, "checkpoint": checkpointed,
           "generate": generate_scenario, "inference_plain": inference_plain, "oom_forward": oom_forward,
           "adamw_hooks_inactive": adamw_hooks_inactive, "sliced_layers": sliced_layers}[scenario]
    model, kept = run()
    keep(*kept)
    del kept
    report(scenario, model)
