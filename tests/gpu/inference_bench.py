"""What the profiler costs the workloads people would leave it on for (scripts/gpu_check.py,
bench_inference): a HF transformers Llama (tests/gpu/llama_train.py's model, random init) doing greedy
`generate` (batch 8, 128 new tokens, bf16), the same model's training step (AdamW, bf16 autocast,
batch 8 x 256), and `torch.empty` alloc/free pairs through PyTorch's caching allocator.

    inference_bench.py ROUNDS

Processes differ from each other by more than the profiler costs (the same bare program runs at
either of two speeds on an H200 host), so under the profiler each round times every workload twice
in this one process, recording on and recording paused (gpumemprof_pause, include/gpumemprof.h),
the order alternating. The pairs are then timed once more with the framework bridge detached: its
tracker is still called by PyTorch and returns at once, so "on" less "detached" is our cost above
PyTorch's own tracker call. Without the profiler each round times each workload once ("bare").
Prints one JSON object: per workload its unit and the list of timings per variant.
"""
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

import torch  # noqa: E402

NEW_TOKENS = 128
TRAIN_STEPS = 5
PAIRS = 20_000
# Timings per round of each workload: the shorter ones are timed more often, for the same spread.
REPEATS = {"generate": 1, "train_step": 2, "pairs": 4}


def profiler():
    """The preloaded shim's pause/resume and the bridge's detach, or None without the profiler."""
    lib = ctypes.CDLL(None)
    if not hasattr(lib, "gpumemprof_pause"):
        return None
    lib.gpumemprof_framework_self_check.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int]
    return lib


def model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
    return LlamaForCausalLM(config).cuda()


def timed(fn, count):
    """fn() once, synchronised: ms per unit of `count`."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / count


def workloads():
    train_model = model()
    optimizer = torch.optim.AdamW(train_model.parameters(), lr=1e-4)
    batch = torch.randint(0, 32000, (8, 256), device="cuda")

    def train():
        for _ in range(TRAIN_STEPS):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = train_model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    infer_model = model().to(torch.bfloat16).eval()
    prompt = torch.randint(0, 32000, (8, 32), device="cuda")

    def generate():
        with torch.inference_mode():
            out = infer_model.generate(prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                                       pad_token_id=0)
        assert out.shape[1] == prompt.shape[1] + NEW_TOKENS

    dev = torch.device("cuda", 0)

    def pairs():
        for _ in range(PAIRS):
            t = torch.empty(256, device=dev)
            del t

    # name: (unit, function, units per call, scale to the unit from ms per unit)
    return {"generate": ("ms/token", generate, NEW_TOKENS, 1.0),
            "train_step": ("ms/step", train, TRAIN_STEPS, 1.0),
            "pairs": ("ns/pair", pairs, PAIRS, 1e6)}


def main():
    rounds = int(sys.argv[1])
    lib = profiler()
    work = workloads()
    for _, fn, _, _ in work.values():  # warm-up: kernels loaded, the allocator's cache filled
        fn()
    results = {name: {"unit": unit} for name, (unit, _, _, _) in work.items()}
    for name, (_, fn, count, scale) in work.items():
        res = results[name]
        for r in range(rounds * REPEATS[name]):
            if lib is None:
                res.setdefault("bare", []).append(timed(fn, count) * scale)
                continue
            for variant in (("on", "paused") if r % 2 == 0 else ("paused", "on")):
                (lib.gpumemprof_pause if variant == "paused" else lib.gpumemprof_resume)()
                res.setdefault(variant, []).append(timed(fn, count) * scale)
            lib.gpumemprof_resume()
    if lib is not None:  # last: detaching cannot be undone
        lib.gpumemprof_framework_self_check(0, 0, 0)
        _, fn, count, scale = work["pairs"]
        results["pairs"]["detached"] = [timed(fn, count) * scale for _ in range(rounds * REPEATS["pairs"])]
    results["profiled"] = lib is not None
    for name in work:
        for variant, values in list(results[name].items()):
            if isinstance(values, list):
                results[name][variant + "_median"] = statistics.median(values)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
