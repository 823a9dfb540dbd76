#!/usr/bin/env bash
# Real-GPU check of gpumemprof in one call: builds the CUDA workloads in tests/gpu/, runs each
# (and PyTorch with three allocator settings) under LD_PRELOAD=build/lib/libgpumemprof.so,
# compares every summary.json with the workload's ground truth (tests/gpu/compare.py), times
# allocation pairs with and without the shim, and prints one table.
#
#   scripts/gpu-check.sh            results in $OUT when set, else build/gpu-check/
#   GPU_CHECK_ONLY="hotpath_costs bench_async" scripts/gpu-check.sh    only these (globs allowed:
#                                   "torch_*", "bench_*"); the table then holds only them. Names:
#     rt_static rt_shared driver_api async_pools vmm torch_default torch_expandable torch_async
#     torch_oom rt_oom_exit torch_train python_layout hotpath_costs bench_async bench_malloc bench_train
#                                   (default: all; commas work as separators too)
# torch_train runs tests/gpu/train.py through `gpumemprof run` (the launcher, NVTX injection,
# marks) and keeps its report, report.json, Perfetto export, folded stacks and HTML report.
# python_layout compiles tests/python_layout/check_python_layout.cpp against $PY's own headers:
# the frame reader's struct offsets (shim/python_layouts.h) against offsetof on that Python.
# bench_train times training steps without the shim, with it at default settings, with
# GPUMEMPROF_PYTHON_STACKS=0 (what Python frames cost) and with GPUMEMPROF_STACKS=0 (what stack
# capture costs).
# torch_oom and rt_oom_exit run out of device memory on purpose: their OOM bundles
# (<run dir>/oom/oom_dump_*/) are checked against their ground truth by compare.py.
#
# Files written there (at most 4): table.txt, table.json, log.txt, gpu-check.tar.gz (every
# ground truth, summary.json, manifest, gpumemprof.log, OOM bundle JSON, stdout/stderr, build log,
# the hot-path cost JSONs, and each workload's trace.gmpt when under 8 MiB; the benchmark's and
# hotpath_costs' run directories are reduced to summary.json, manifest and log: their traces are
# hundreds of MB).
# Exit status: 0 all good, 1 a MISMATCH or FAIL, 2 only the benchmark over target, 3 prerequisites
# missing or an unknown name in GPU_CHECK_ONLY. Designed for < 3 minutes; a global deadline
# (GPU_CHECK_DEADLINE, 420 s) caps every timeout so that the whole script ends well under 8
# minutes even if everything hangs.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 3
DEST=${OUT:-$ROOT/build/gpu-check}
SHIM=$ROOT/build/lib/libgpumemprof.so
PY=${PYTHON:-python3}
DEADLINE=$((SECONDS + ${GPU_CHECK_DEADLINE:-420}))
ROUNDS=${GPU_CHECK_BENCH_ROUNDS:-4}      # A/B rounds per benchmark
ASYNC_PAIRS=${GPU_CHECK_ASYNC_PAIRS:-200000}
MALLOC_PAIRS=${GPU_CHECK_MALLOC_PAIRS:-2000}
REPS=5                                   # timed repetitions per benchmark process (median)
ALL_NAMES="rt_static rt_shared driver_api async_pools vmm torch_default torch_expandable torch_async torch_oom rt_oom_exit torch_train python_layout hotpath_costs bench_async bench_malloc bench_train"
TOOL=$ROOT/build/bin/gpumemprof
# Words of GPU_CHECK_ONLY (commas allowed too), read without glob expansion against the cwd.
ONLY_WORDS=${GPU_CHECK_ONLY:-}
read -r -a ONLY <<<"${ONLY_WORDS//,/ }"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 3
BIN=$WORK/bin
mkdir -p "$DEST" "$BIN" "$WORK/build" "$WORK/bench"
: > "$WORK/plan.txt"

say() { printf '%s\n' "$*"; }

# want NAME: whether GPU_CHECK_ONLY (unset or empty: everything) selects this workload.
want() {
  ((${#ONLY[@]} == 0)) && return 0
  local p
  # shellcheck disable=SC2053  # the right-hand side is a glob on purpose
  for p in "${ONLY[@]}"; do [[ $1 == $p ]] && return 0; done
  return 1
}

# Every word of GPU_CHECK_ONLY must select something: a typo must not run an empty check.
check_only() {
  local p n ok bad=0
  # shellcheck disable=SC2053
  for p in ${ONLY[@]+"${ONLY[@]}"}; do
    ok=0
    for n in $ALL_NAMES; do [[ $n == $p ]] && ok=1; done
    ((ok)) || { say "GPU_CHECK_ONLY: '$p' selects nothing; names: $ALL_NAMES"; bad=1; }
  done
  ((${#ONLY[@]} == 0)) || say "GPU_CHECK_ONLY: $(for n in $ALL_NAMES; do want "$n" && printf '%s ' "$n"; done)"
  return $bad
}

# needs BINARY: whether a selected workload runs this binary.
needs() {
  case $1 in
    bench_async_pair) want bench_async || want bench_malloc ;;
    *) want "$1" ;;
  esac
}
phase() { printf '\n== %s (t=%ds)\n' "$*" "$SECONDS"; }

# Seconds a command may run now: its own limit, cut to what is left before the deadline.
budget() {
  local left=$((DEADLINE - SECONDS - 20))
  if ((left < 1)); then echo 1; elif ((left < $1)); then echo "$left"; else echo "$1"; fi
}

prereqs() {
  phase "prerequisites"
  local bad=0
  if command -v nvidia-smi >/dev/null; then
    timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv,noheader
  else
    say "MISSING nvidia-smi"; bad=1
  fi
  # Resolved to its real path: nvcc finds its headers relative to where it really lives.
  if [ -z "${NVCC:-}" ]; then
    NVCC=/usr/local/cuda/bin/nvcc
    [ -x "$NVCC" ] || NVCC=$(command -v nvcc)
  fi
  NVCC=$(readlink -f "$NVCC")
  if [ -x "$NVCC" ]; then "$NVCC" --version | tail -n 2; else say "MISSING nvcc"; bad=1; fi
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
  if want "torch_*" || want bench_train; then
    timeout 60 "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' \
      || say "WARNING: $PY cannot import torch; the torch workloads will show FAIL"
  fi
  if [ -f "$SHIM" ]; then
    ls -l "$SHIM"
    ldd "$SHIM" | grep 'not found' && say "WARNING: the shim has unresolved dependencies"
  else
    say "MISSING $SHIM (build it first: cmake --build build)"; bad=1
  fi
  return $bad
}

# nvcc for every workload at once; a failure shows as a FAIL row later ("not built").
compile() {
  phase "compile"
  local cap arch
  cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  arch=sm_${cap:-90}
  [[ $arch =~ ^sm_[0-9]+$ ]] || arch=sm_90
  local nv=(timeout "$(budget 180)" "$NVCC" -O2 "-arch=$arch" -I"$ROOT/tests/gpu")
  local rpath=(-Xlinker "-rpath=$CUDA_HOME/lib64:$CUDA_HOME/targets/x86_64-linux/lib")
  local src=$ROOT/tests/gpu b=$WORK/build
  needs rt_static && "${nv[@]}" -o "$BIN/rt_static" "$src/rt_static.cu" >"$b/rt_static.log" 2>&1 &
  needs rt_shared && "${nv[@]}" -cudart shared "${rpath[@]}" -o "$BIN/rt_shared" "$src/rt_static.cu" >"$b/rt_shared.log" 2>&1 &
  needs driver_api && "${nv[@]}" -o "$BIN/driver_api" "$src/driver_api.cpp" -lcuda >"$b/driver_api.log" 2>&1 &
  needs async_pools && "${nv[@]}" -o "$BIN/async_pools" "$src/async_pools.cu" >"$b/async_pools.log" 2>&1 &
  needs vmm && "${nv[@]}" -o "$BIN/vmm" "$src/vmm.cu" >"$b/vmm.log" 2>&1 &
  needs rt_oom_exit && "${nv[@]}" -o "$BIN/rt_oom_exit" "$src/rt_oom_exit.cu" >"$b/rt_oom_exit.log" 2>&1 &
  needs hotpath_costs && "${nv[@]}" -o "$BIN/hotpath_costs" "$src/hotpath_costs.cu" >"$b/hotpath_costs.log" 2>&1 &
  needs bench_async_pair && "${nv[@]}" -o "$BIN/bench_async_pair" "$src/bench_async_pair.cu" >"$b/bench_async_pair.log" 2>&1 &
  wait
  local f
  for f in rt_static rt_shared driver_api async_pools vmm rt_oom_exit hotpath_costs bench_async_pair; do
    needs "$f" || continue
    if [ -x "$BIN/$f" ]; then say "built $f ($arch)"; else say "BUILD FAILED $f:"; tail -n 15 "$b/$f.log"; fi
  done
}

# run_workload NAME c|torch LIMIT [VAR=VALUE ...] -- COMMAND ARGS...
# Runs once under the shim, in its own directory, with its run directory at NAME/runs/run.<pid>.
# rc: the workload's exit status; -1 skipped (deadline), -2 not built, 124/137 timed out.
# The OOM bundle settings are unset so that bundles go to <run dir>/oom/ with the defaults.
run_workload() {
  local name=$1 type=$2 limit=$3; shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local d=$WORK/$name t0=$SECONDS rc
  mkdir -p "$d/runs"
  echo "$name $type" >>"$WORK/plan.txt"
  limit=$(budget "$limit")
  if ((limit < 10)); then
    rc=-1
  elif [ "$type" = c ] && [ ! -x "$1" ]; then
    rc=-2  # not built
  else
    (cd "$d" && timeout -k 5 "$limit" env -u PYTORCH_CUDA_ALLOC_CONF -u GPUMEMPROF_ENABLE \
      -u GPUMEMPROF_OOM_DIR -u GPUMEMPROF_OOM_MAX_DUMPS -u GPUMEMPROF_OOM_MAX_TOTAL_MB -u GPUMEMPROF_OOM_EVENTS \
      GROUND_TRUTH="$d/gt.json" GPUMEMPROF_OUTPUT="$d/runs/run.%p" GPU_CHECK_NAME="$name" \
      ${envs[@]+"${envs[@]}"} LD_PRELOAD="$SHIM" "$@" >"$d/stdout.txt" 2>"$d/stderr.txt")
    rc=$?
  fi
  echo "$rc" >"$d/rc"
  printf '%-18s rc=%-4s %3ds  run dirs: %s\n' "$name" "$rc" $((SECONDS - t0)) "$(find "$d/runs" -mindepth 1 -maxdepth 1 -printf '%f ' | head -c 120)"
  if [ "$rc" != 0 ] && [ -s "$d/stderr.txt" ]; then tail -n 5 "$d/stderr.txt" | sed 's/^/    /'; fi
}

workloads() {
  phase "workloads under the shim"
  want rt_static && run_workload rt_static c 60 -- "$BIN/rt_static"
  want rt_shared && run_workload rt_shared c 60 -- "$BIN/rt_shared"
  want driver_api && run_workload driver_api c 60 -- "$BIN/driver_api"
  want async_pools && run_workload async_pools c 60 -- "$BIN/async_pools"
  want vmm && run_workload vmm c 60 -- "$BIN/vmm"
  local py=$ROOT/tests/gpu/torch_alloc.py
  want torch_default && run_workload torch_default torch 120 -- "$PY" "$py"
  want torch_expandable && run_workload torch_expandable torch 120 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- "$PY" "$py"
  want torch_async && run_workload torch_async torch 120 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- "$PY" "$py"
  # Out of memory on purpose (default allocator): one bundle for cudaMalloc + its retry.
  want torch_oom && run_workload torch_oom torch 120 -- "$PY" "$ROOT/tests/gpu/torch_oom.py"
  # Static cudart: a failed cudaMalloc, then exit(3) with nothing freed (rc 3 is expected).
  want rt_oom_exit && run_workload rt_oom_exit c 60 -- "$BIN/rt_oom_exit"
  want torch_train && train_run
  want python_layout && python_layout
  oom_listing
  want hotpath_costs && hotpath
  return 0
}

# torch_train: the training job through the launcher, then every post-mortem command on its run
# directory; compare.py checks the report against PyTorch's counters and the attribution.
train_run() {
  local name=torch_train d=$WORK/torch_train t0=$SECONDS rc run f
  mkdir -p "$d"
  echo "$name train" >>"$WORK/plan.txt"
  (cd "$d" && timeout -k 5 "$(budget 180)" env -u PYTORCH_CUDA_ALLOC_CONF GROUND_TRUTH="$d/gt.json" \
    GPU_CHECK_NAME=$name "$TOOL" run -o "$d/runs" -- "$PY" "$ROOT/tests/gpu/train.py" >"$d/stdout.txt" 2>"$d/stderr.txt")
  rc=$?
  echo "$rc" >"$d/rc"
  run=$(find "$d/runs" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  if [ -n "$run" ]; then
    "$TOOL" report "$run" >"$d/report.txt" 2>"$d/report.stderr"
    "$TOOL" report "$run" --json >"$d/report.json" 2>>"$d/report.stderr"
    "$TOOL" export "$run" --format perfetto -o "$d/perfetto.json" 2>>"$d/report.stderr"
    "$TOOL" export "$run" --format folded -o "$d/folded.txt" 2>>"$d/report.stderr"
    "$TOOL" html "$run" -o "$d/report.html" 2>>"$d/report.stderr"
    for f in attribution.jsonl; do cp "$run/$f" "$d/$f.txt" 2>/dev/null; done
  fi
  printf '%-18s rc=%-4s %3ds  %s\n' "$name" "$rc" $((SECONDS - t0)) "$(head -n 12 "$d/report.txt" 2>/dev/null | tr '\n' '|' | head -c 300)"
  if [ "$rc" != 0 ] && [ -s "$d/stderr.txt" ]; then tail -n 5 "$d/stderr.txt" | sed 's/^/    /'; fi
}

# python_layout: the frame reader's offsets against this Python's headers (internal ones included).
python_layout() {
  local name=python_layout d=$WORK/python_layout inc rc
  mkdir -p "$d"
  echo "$name layout" >>"$WORK/plan.txt"
  inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>"$d/stderr.txt")
  if [ ! -f "$inc/Python.h" ]; then
    rc=-3  # no development headers for this Python: nothing to check against
  elif timeout "$(budget 60)" g++ -std=c++20 -I"$inc" -o "$BIN/check_python_layout" \
    "$ROOT/tests/python_layout/check_python_layout.cpp" >"$d/build.txt" 2>&1; then
    "$BIN/check_python_layout" >"$d/stdout.txt" 2>>"$d/stderr.txt"
    rc=$?
  else
    rc=-2
    tail -n 5 "$d/build.txt" | sed 's/^/    /'
  fi
  echo "$rc" >"$d/rc"
  printf '%-18s rc=%-4s %s\n' "$name" "$rc" "$(head -n 1 "$d/stdout.txt" 2>/dev/null) $(tail -n 1 "$d/stdout.txt" 2>/dev/null)"
}

# bench_train: median step time of train.py --bench, without the shim, at default settings, without
# Python frames and with stacks off; variants interleaved over the rounds.
bench_train() {
  local r v stem limit order rd
  mkdir -p "$WORK/bench"
  for ((r = 1; r <= ROUNDS; r++)); do
    order=(base shim nopython nostacks)
    ((r % 2 == 0)) && order=(nostacks nopython shim base)
    for v in "${order[@]}"; do
      stem=$WORK/bench/train.$v.$r
      rd=$WORK/bench/rd.train.$r
      limit=$(budget 90)
      if ((limit < 10)); then echo -1 >"$stem.rc"; continue; fi
      case $v in
        base) timeout -k 5 "$limit" "$PY" "$ROOT/tests/gpu/train.py" --bench 40 >"$stem.json" 2>"$stem.stderr" ;;
        shim) timeout -k 5 "$limit" env GPUMEMPROF_OUTPUT="$rd/run.%p" LD_PRELOAD="$SHIM" \
          "$PY" "$ROOT/tests/gpu/train.py" --bench 40 >"$stem.json" 2>"$stem.stderr" ;;
        nopython) timeout -k 5 "$limit" env GPUMEMPROF_PYTHON_STACKS=0 GPUMEMPROF_OUTPUT="$rd/run.%p" LD_PRELOAD="$SHIM" \
          "$PY" "$ROOT/tests/gpu/train.py" --bench 40 >"$stem.json" 2>"$stem.stderr" ;;
        nostacks) timeout -k 5 "$limit" env GPUMEMPROF_STACKS=0 GPUMEMPROF_OUTPUT="$rd/run.%p" LD_PRELOAD="$SHIM" \
          "$PY" "$ROOT/tests/gpu/train.py" --bench 40 >"$stem.json" 2>"$stem.stderr" ;;
      esac
      echo $? >"$stem.rc"
      rm -rf "$rd"
      printf '  train  %-8s round %s %s\n' "$v" "$r" "$(cat "$stem.json" 2>/dev/null)"
    done
  done
}

# The OOM bundles written (name, mode, size of each file), for the log; compare.py judges them.
oom_listing() {
  local d
  for d in "$WORK"/*/runs/*/oom; do
    [ -d "$d" ] || continue
    say "oom bundles in ${d#"$WORK"/}:"
    find "$d" -mindepth 1 -printf '    %P %m %s\n' | sort | head -n 40
  done
}

# hotpath_costs (INFO): ns per call of the hot path's ingredients, once without the shim and once
# with it: hotpath_costs/{base,shim}.{json,rc,stderr}. Its run directory under the shim keeps
# summary.json, manifest.json and gpumemprof.log; the trace (a million events) is deleted.
hotpath() {
  local name=hotpath_costs d=$WORK/hotpath_costs t0=$SECONDS v rc limit
  mkdir -p "$d/runs"
  echo "$name hotpath" >>"$WORK/plan.txt"
  for v in base shim; do
    limit=$(budget 60)
    if ((limit < 10)); then
      rc=-1
    elif [ ! -x "$BIN/hotpath_costs" ]; then
      rc=-2
    elif [ "$v" = base ]; then
      (cd "$d" && timeout -k 5 "$limit" env -u LD_PRELOAD "$BIN/hotpath_costs" >"$d/base.json" 2>"$d/base.stderr")
      rc=$?
    else
      (cd "$d" && timeout -k 5 "$limit" env -u GPUMEMPROF_ENABLE GPUMEMPROF_OUTPUT="$d/runs/run.%p" \
        LD_PRELOAD="$SHIM" "$BIN/hotpath_costs" >"$d/shim.json" 2>"$d/shim.stderr")
      rc=$?
    fi
    echo "$rc" >"$d/$v.rc"
    printf '%-18s %-4s rc=%-4s %s\n' "$name" "$v" "$rc" "$(head -c 400 "$d/$v.json" 2>/dev/null)"
    if [ "$rc" != 0 ] && [ -s "$d/$v.stderr" ]; then tail -n 5 "$d/$v.stderr" | sed 's/^/    /'; fi
  done
  du -sh "$d/runs" 2>/dev/null | sed 's/^/    shim run dir: /'
  find "$d/runs" -name trace.gmpt -delete
  say "$name: $((SECONDS - t0))s"
}

# One benchmark process. The shim's run directory (its trace is big) is reduced to summary.json.
bench_one() {
  local mode=$1 variant=$2 round=$3 pairs=$4
  local stem=$WORK/bench/$mode.$variant.$round rd=$WORK/bench/rd.$mode.$round rc limit
  limit=$(budget 60)
  if ((limit < 10)); then echo -1 >"$stem.rc"; return; fi
  if [ "$variant" = shim ]; then
    mkdir -p "$rd"
    (cd "$rd" && timeout -k 5 "$limit" env GPUMEMPROF_OUTPUT="$rd/run.%p" LD_PRELOAD="$SHIM" \
      "$BIN/bench_async_pair" "$mode" "$pairs" "$REPS" >"$stem.json" 2>"$stem.stderr")
    rc=$?
    cp "$rd"/*/summary.json "$stem.summary.json" 2>/dev/null
    cp "$rd"/*/gpumemprof.log "$stem.gpumemprof.log" 2>/dev/null
    du -sh "$rd" 2>/dev/null | sed 's/^/    shim run dir: /'
    rm -rf "$rd"
  else
    timeout -k 5 "$limit" "$BIN/bench_async_pair" "$mode" "$pairs" "$REPS" >"$stem.json" 2>"$stem.stderr"
    rc=$?
  fi
  echo "$rc" >"$stem.rc"
  printf '  %-6s %-4s round %s rc=%s %s\n' "$mode" "$variant" "$round" "$rc" \
    "$(grep -o '"median_ns": [0-9.]*' "$stem.json" 2>/dev/null)"
}

bench() {
  want bench_train && { phase "benchmark: training steps"; bench_train; }
  needs bench_async_pair || return 0
  phase "benchmark: $ROUNDS A/B rounds, $REPS timed repetitions per process"
  [ -x "$BIN/bench_async_pair" ] || { say "bench_async_pair not built"; return; }
  local r v
  for ((r = 1; r <= ROUNDS; r++)); do
    # Alternate which variant goes first, so that drift over the run does not favour one.
    local order=(base shim)
    ((r % 2 == 0)) && order=(shim base)
    if want bench_async; then for v in "${order[@]}"; do bench_one async "$v" "$r" "$ASYNC_PAIRS"; done; fi
    if want bench_malloc; then for v in "${order[@]}"; do bench_one malloc "$v" "$r" "$MALLOC_PAIRS"; done; fi
  done
}

# Everything small and useful: every summary.json and manifest.json, every OOM bundle's JSON,
# other JSON and text up to 4 MiB, logs (gpumemprof.log included) and traces under 8 MiB (a
# bigger log: its last MiB), listings.
# Over 15 MiB compressed, the traces go first, then everything but ground truths and summaries.
pack() {
  phase "pack"
  local f
  while IFS= read -r f; do
    tail -c 1048576 "$f" >"$f.tail.txt"
  done < <(find "$WORK" -path "$WORK/bin" -prune -o -type f -name '*.log' -size +8388607c -print)
  (cd "$WORK" && find . -path ./bin -prune -o -type f -printf '%P %s\n' | sort) >"$WORK/files.txt"
  (cd "$WORK" && find . -path ./bin -prune -o -type f \( -name summary.json -o -name manifest.json -o \
    \( -path '*/oom/oom_dump_*' -name '*.json' -size -16777216c \) -o \
    \( -size -4194304c \( -name '*.json' -o -name '*.txt' -o -name rc -o -name '*.rc' -o -name '*.stderr' \) \) -o \
    \( -size -8388608c \( -name '*.log' -o -name trace.gmpt \) \) \) -print) >"$WORK/pack.lst"
  local lst=$WORK/pack.lst
  tar -czf "$DEST/gpu-check.tar.gz" -C "$WORK" -T "$lst" 2>/dev/null
  if [ "$(stat -c %s "$DEST/gpu-check.tar.gz")" -gt $((15 << 20)) ]; then
    say "tarball too big; leaving out the traces"
    lst=$WORK/pack2.lst
    grep -v '/trace\.gmpt$' "$WORK/pack.lst" >"$lst"
    tar -czf "$DEST/gpu-check.tar.gz" -C "$WORK" -T "$lst" 2>/dev/null
  fi
  if [ "$(stat -c %s "$DEST/gpu-check.tar.gz")" -gt $((15 << 20)) ]; then
    say "tarball still too big; keeping only ground truths and summaries"
    lst=$WORK/pack3.lst
    grep -E 'gt\.json$|summary\.json$|plan\.txt$|files\.txt$|/rc$|\.rc$|/oom/oom_dump_[^/]*/(manifest|metadata|allocations)\.json$' "$WORK/pack.lst" >"$lst"
    tar -czf "$DEST/gpu-check.tar.gz" -C "$WORK" -T "$lst"
  fi
  ls -l "$DEST/gpu-check.tar.gz"
  say "packed: $(wc -l <"$lst") files, of them traces: $(grep -c '/trace\.gmpt$' "$lst")"
}

main() {
  say "gpumemprof gpu-check: repo $ROOT, work $WORK, results $DEST"
  check_only || return 3
  prereqs || { say "prerequisites missing, nothing run"; return 3; }
  compile
  workloads
  bench
  pack
  phase "compare"
  "$PY" "$ROOT/tests/gpu/compare.py" --work "$WORK" --out "$DEST"
  local rc=$?
  say "gpu-check finished in ${SECONDS}s, exit $rc (0 ok, 1 mismatch/fail, 2 benchmark over target); files in $DEST"
  return $rc
}

main 2>&1 | tee "$DEST/log.txt"
rc=${PIPESTATUS[0]}
[ -n "${GPU_CHECK_KEEP:-}" ] || rm -rf "$WORK"
exit "$rc"
