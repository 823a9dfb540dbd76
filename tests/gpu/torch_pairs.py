"""Per tensor alloc/free pair cost through PyTorch's caching allocator, for scripts/gpu_check.py:
`torch.empty(256)` then its release, N times, timed in 5 repetitions; prints
{"ns_per_pair": median}. With --history, PyTorch's own recorder is on first
(torch.cuda.memory._record_memory_history(stacks="python")), the alternative users have."""
import json
import statistics
import sys
import time

import torch


def main():
    pairs = int(sys.argv[1])
    if "--history" in sys.argv:
        torch.cuda.memory._record_memory_history(stacks="python")
    dev = torch.device("cuda", 0)
    for _ in range(1000):
        torch.empty(256, device=dev)
    times = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(pairs):
            t = torch.empty(256, device=dev)
            del t
        times.append((time.perf_counter_ns() - t0) / pairs)
    print(json.dumps({"ns_per_pair": statistics.median(times), "pairs": pairs, "reps": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
