#!/usr/bin/env bash
# Builds gpumemprof, profiles the demo workload end to end and prints the report. On a machine
# with an NVIDIA driver it runs on the real GPU; otherwise on the fake CUDA driver from tests/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${GPUMEMPROF_SKIP_BUILD:-0}" != 1 ]; then
  scripts/setup.sh
  # A first build takes minutes: a line at every tenth of ninja's steps, on stderr.
  echo "gpumemprof demo: building (a few minutes on a fresh machine)" >&2
  scripts/build.sh gpumemprof gpumemprof_cli gpumemprof-demo fakecuda |
    awk -F'[][/]' '/^\[[1-9][0-9]*\/[0-9]+\]/ { pct = int(100 * $2 / $3)
                     if (pct >= next_pct) { printf "  built %d of %d steps (%d%%)\n", $2, $3, pct > "/dev/stderr"
                                            next_pct = pct - pct % 10 + 10 } }'
fi

runs="$PWD/build/demo-runs"
mkdir -p "$runs"
env_lib=()
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: running on the real GPU: $(nvidia-smi -L | head -n 1)"
else
  echo "demo: no NVIDIA GPU or driver here, so the demo runs on the fake CUDA driver"
  echo "      (tests/fake_driver: a libcuda.so.1 test double backed by host memory, 16 GiB per device)"
  env_lib=(LD_LIBRARY_PATH="$PWD/build/tests/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi

root="$runs/$(date -u +%Y%m%dT%H%M%SZ)"
env "${env_lib[@]}" build/bin/gpumemprof run -o "$root" -- build/bin/gpumemprof-demo
dir=$(ls -1d "$root"/* 2>/dev/null | head -n 1)
[ -n "$dir" ] || { echo "demo: no run directory was written" >&2; exit 1; }
echo
echo "demo: the run directory is $dir"
build/bin/gpumemprof report "$dir"
echo
echo "Next: build/bin/gpumemprof report --json $dir    (machine-readable)"
echo "      build/bin/gpumemprof run -- your_program    (profile your own)"
