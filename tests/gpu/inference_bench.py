"""What the profiler costs the workloads people would leave it on for (scripts/gpu_check.py,
bench_inference): a HF transformers Llama (tests/gpu/llama_train.py's model, random init) doing greedy
`generate` (batch 8, 128 new tokens, bf16), the same model's training step (AdamW, bf16 autocast,
batch 8 x 256), and `torch.empty` alloc/free pairs through PyTorch's caching allocator.

    inference_bench.py ROUNDS [WORKLOAD,...] [--alternate hooks]

A GPU host's processes differ from each other by more than the profiler costs, and inside one
process the time of a step wanders by several percent from second to second. So under the profiler
the units of work alternate, one recording and the next paused (gpumemprof_pause,
include/gpumemprof.h), and each unit is compared with its neighbour: every token of a generate
(timed from a stopping criterion, which HF calls once per token, synchronised), every training
step, every block of 1,000 tensor pairs. Without the profiler the same units are timed ("bare").
Prints one JSON object: per workload its unit, the timings per variant, and for the profiled runs
the ratio of each unit recording to the paused unit beside it ("ratios") and their difference
("diffs", in the unit).

The category hooks (issue 33) cost Python work at the phases and labels, which the pause does not
switch off. `--alternate hooks` (scripts/gpu_check.py's bench_categories) alternates them instead,
recording throughout: units with the hooks on ("hooks_on") and with them returning at once
("hooks_off", the bootstrap's set_active(False)), each compared with its neighbour the same way.
"alternate" in the JSON says which; "categories" the GPUMEMPROF_CATEGORIES setting.
"""
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformers import LlamaConfig, LlamaForCausalLM, StoppingCriteria, StoppingCriteriaList  # noqa: E402

import torch  # noqa: E402

NEW_TOKENS = 128
PAIR_BLOCK = 1000


def profiler():
    """The preloaded shim's pause and resume, or None without the profiler."""
    lib = ctypes.CDLL(None)
    return lib if hasattr(lib, "gpumemprof_pause") else None


def recording_switch(lib):
    """Units alternate recording ("on") and paused; None without the profiler."""
    return None if lib is None else (("on", lib.gpumemprof_resume), ("paused", lib.gpumemprof_pause))


def hooks_switch(lib):
    """Units alternate the category hooks on and off (the bootstrap's set_active), recording
    throughout."""
    categories = sys.modules.get("_gpumemprof_categories")
    if lib is None or categories is None or not hasattr(categories, "set_active"):
        sys.exit("inference_bench.py: --alternate hooks needs the profiler and its bootstrap in the process")
    return ("hooks_on", lambda: categories.set_active(True)), ("hooks_off", lambda: categories.set_active(False))


class Alternation:
    """Sets the switch's first state for even units and its second for odd ones, and keeps each
    unit's time by the state it ran in; without a switch every unit is "bare"."""

    def __init__(self, switch):
        self.switch, self.unit = switch, 0
        self.names = [name for name, _ in switch] if switch else []
        self.times = {name: [] for name in self.names + ["bare"]}
        self.ratios, self.diffs = [], []  # each unit of the first state against the unit after it
        self.set_state()

    def state(self):
        return self.names[self.unit % 2] if self.switch else "bare"

    def set_state(self):
        if self.switch:
            self.switch[self.unit % 2][1]()

    def done(self, ms):
        """The unit that just ended took `ms`; the next one starts in the other state."""
        state = self.state()
        self.times[state].append(ms)
        if self.switch and state == self.names[1] and self.times[self.names[0]]:
            self.ratios.append(self.times[self.names[0]][-1] / ms)
            self.diffs.append(self.times[self.names[0]][-1] - ms)
        self.unit += 1
        self.set_state()

    def restart(self):
        """A new sequence of units (a new generate): a unit that began before it is not compared."""
        if self.unit % 2 == 1:
            self.unit += 1
        self.set_state()


def model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
    return LlamaForCausalLM(config).cuda()


class PerToken(StoppingCriteria):
    """Called by generate once per new token: ends that token's timing (after a synchronisation,
    which generate does at each token anyway) and never stops the generation."""

    def __init__(self, alt):
        self.alt, self.t = alt, None

    def __call__(self, input_ids, scores, **kwargs):
        torch.cuda.synchronize()
        now = time.perf_counter()
        if self.t is not None:
            self.alt.done((now - self.t) * 1e3)
        self.t = now
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def bench_generate(switch, rounds):
    infer_model = model().to(torch.bfloat16).eval()
    prompt = torch.randint(0, 32000, (8, 32), device="cuda")
    alt = Alternation(switch)

    def generate(criteria):
        with torch.inference_mode():
            out = infer_model.generate(prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                                       pad_token_id=0, stopping_criteria=criteria)
        assert out.shape[1] == prompt.shape[1] + NEW_TOKENS

    generate(None)  # warm-up
    for _ in range(rounds):
        alt.restart()
        generate(StoppingCriteriaList([PerToken(alt)]))
    return "ms/token", alt


def bench_train(switch, rounds):
    train_model = model()
    optimizer = torch.optim.AdamW(train_model.parameters(), lr=1e-4)
    batch = torch.randint(0, 32000, (8, 256), device="cuda")
    alt = Alternation(switch)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = train_model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    alt.restart()
    for _ in range(rounds * 16):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        alt.done((time.perf_counter() - t0) * 1e3)
    del train_model, optimizer
    return "ms/step", alt


def bench_pairs(switch, rounds):
    dev = torch.device("cuda", 0)
    alt = Alternation(switch)
    for _ in range(PAIR_BLOCK):
        torch.empty(256, device=dev)
    alt.restart()
    for _ in range(rounds * 100):
        t0 = time.perf_counter_ns()
        for _ in range(PAIR_BLOCK):
            t = torch.empty(256, device=dev)
            del t
        alt.done((time.perf_counter_ns() - t0) / PAIR_BLOCK / 1e6)  # as ms; reported in ns below
    return "ns/pair", alt


def main():
    args = [a for a in sys.argv[1:] if a != "--alternate"]
    alternate = "hooks" if "--alternate" in sys.argv and "hooks" in args else "recording"
    args = [a for a in args if a != "hooks"]
    rounds = int(args[0])
    workloads = (("generate", bench_generate), ("train_step", bench_train), ("pairs", bench_pairs))
    chosen = args[1].split(",") if len(args) > 1 else [name for name, _ in workloads]
    lib = profiler()
    switch = hooks_switch(lib) if alternate == "hooks" else recording_switch(lib)
    results = {"profiled": lib is not None, "categories": os.environ.get("GPUMEMPROF_CATEGORIES") or "on",
               "alternate": alternate}
    for name, fn in workloads:
        if name not in chosen:
            continue
        unit, alt = fn(switch, rounds)
        scale = 1e6 if unit == "ns/pair" else 1.0
        res = {"unit": unit}
        for variant, values in alt.times.items():
            if values:
                res[variant] = [v * scale for v in values]
                res[variant + "_median"] = statistics.median(res[variant])
        if alt.ratios:
            res["ratios"] = alt.ratios
            res["ratio_median"] = statistics.median(alt.ratios)
            res["diffs"] = [v * scale for v in alt.diffs]
            res["diff_median"] = statistics.median(res["diffs"])
        results[name] = res
    if switch:
        switch[0][1]()  # recording, the hooks on
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
