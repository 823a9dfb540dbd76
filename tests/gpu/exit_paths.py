"""PyTorch ending without exit handlers, for scripts/gpu_check.py: allocates 1 GiB under the shim,
writes its ground truth to $GROUND_TRUTH, then ends the way argv[1] says:
  os_exit     os._exit(3): no exit handlers run
  sigterm     SIGTERM to itself (default action: killed, status 143)
  oom_retry   a 128 TiB tensor fails with OutOfMemoryError, is caught, then a 4 MiB tensor; exit 0
compare.py (compare_exit) checks that summary.json says how the process ended and that every
recorded event reached the trace."""
import json
import os
import signal
import sys
import time

import torch

# How each case must end: the exit status a shell reports and summary.json's "ended_by".
CASES = {"os_exit": (3, "exit_call"), "sigterm": (143, "signal"), "oom_retry": (0, "exit")}


def truth(how, **extra):
    exit_status, ended_by = CASES[how]
    out = {"workload": os.environ.get("GPU_CHECK_NAME", "exit_" + how), "pid": os.getpid(), "ok": True,
           "expect_exit": exit_status, "expect_ended_by": ended_by, "tensor_bytes": 1 << 30, **extra}
    with open(os.environ["GROUND_TRUTH"], "w") as f:
        json.dump(out, f, indent=1)


def main(how):
    x = torch.empty(2**28, device="cuda")  # noqa: F841 (1 GiB of float32, live until the end)
    torch.cuda.synchronize()
    if how == "os_exit":
        truth(how)
        os._exit(3)
    if how == "sigterm":
        truth(how)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    caught = False
    try:
        torch.empty(2**45, device="cuda")
    except torch.OutOfMemoryError:
        caught = True
    y = torch.empty(2**20, device="cuda")  # noqa: F841 (4 MiB)
    torch.cuda.synchronize()
    truth(how, oom_caught=caught, expect_oom_bundles=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
