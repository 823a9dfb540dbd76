#!/usr/bin/env bash
# Real-GPU check of the exit paths that bypass exit handlers, with PyTorch (run after
# scripts/gpu-check.sh in the same device call; docs/validation.md). Each case allocates 1 GiB
# through PyTorch under the shim and ends differently; prints one line per case: the program's
# exit status, summary.json's ended_by / clean_exit, the linear bytes live at the end, and
# whether every recorded event reached the trace (written + unwritten == recorded, unwritten 0).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHIM=$ROOT/build/lib/libgpumemprof.so
WORK=$(mktemp -d /tmp/exit-paths.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
alloc='import os, signal, sys, time, torch
x = torch.empty(2**28, device="cuda"); torch.cuda.synchronize()
how = sys.argv[1]
if how == "os._exit": os._exit(3)
if how == "SIGTERM": os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)
if how == "oom-retry":
    try: torch.empty(2**45, device="cuda")
    except torch.OutOfMemoryError: print("caught OOM, retrying smaller")
    y = torch.empty(2**20, device="cuda")
sys.exit(0)'
for how in os._exit SIGTERM oom-retry; do
  dir=$WORK/$how
  LD_PRELOAD=$SHIM GPUMEMPROF_OUTPUT=$dir OLDPWD=$'/home/u/caf\xe9' python3 -c "$alloc" "$how" >/dev/null 2>"$WORK/err"
  rc=$?
  python3 - "$how" "$rc" "$dir" <<'PY'
import json, os, sys
how, rc, d = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    s = json.load(open(os.path.join(d, "summary.json")))
except OSError as e:
    print(f"{how:10s} rc={rc} NO summary.json ({e})"); sys.exit()
ev = s["events"]
complete = s["trace_events_written"] + ev.get("unwritten", 0) == ev["recorded"] and ev.get("unwritten", 0) == 0
size = os.path.getsize(os.path.join(d, "trace.gmpt"))
print(f"{how:10s} rc={rc} ended_by={s.get('ended_by')} clean_exit={s['clean_exit']} "
      f"linear_current={s['devices'][0]['by_kind']['linear']['current']} recorded={ev['recorded']} "
      f"written={s['trace_events_written']} trace_records={(size - 64) // 64} complete={complete} "
      f"oom_bundles={s['oom']['bundles_written']}")
PY
done
