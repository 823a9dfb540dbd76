"""One rank of the torchrun job of scripts/gpu_check.py (torch_job): keeps a 256 MiB tensor, makes
and drops a 64 MiB one, and writes PyTorch's figures and the launcher's variables as ground truth."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_truth import record  # noqa: E402

MiB = 1 << 20


def body(torch, out):
    out["launcher_env"] = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID")}
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    out["total_memory"] = torch.cuda.get_device_properties(0).total_memory
    kept = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
    dropped = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
    del dropped
    return kept


if __name__ == "__main__":
    sys.exit(record("torch_job", body))
