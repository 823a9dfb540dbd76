#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (not part of the main g++/CMake build) and runs each for
# a short time on the checked-in seed corpus (tests/fuzz/corpus/<target>/).
#
#   tests/fuzz/build.sh                 build, then run each target FUZZ_TIME seconds (default 20)
#   tests/fuzz/build.sh --build-only    build only
#   tests/fuzz/build.sh --run-only      run the targets built last time
#
# FUZZ_OUT: build and work directory (default build-fuzz/). New inputs the fuzzer finds go to
# $FUZZ_OUT/corpus/<target>/ (the checked-in seeds are only read); a crashing input is written to
# $FUZZ_OUT/artifacts/ and the script exits 1. Reproduce one with: $FUZZ_OUT/<target> <file>.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${FUZZ_OUT:-build-fuzz}"
fuzz_time="${FUZZ_TIME:-20}"
cxx="${FUZZ_CXX:-clang++}"
mode="${1:-all}"

targets=(fuzz_trace_reader fuzz_oom_bundle fuzz_json_writers fuzz_redact fuzz_live_file)

# _GLIBCXX_ASSERTIONS bounds-checks std::array/std::vector indexing, which ASan cannot see inside
# an object. GMP_READER_NO_BACKSTOP lets an exception escaping the bundle parser crash the target.
# The spdlog/fmt and version definitions are the collector's own (collector/CMakeLists.txt).
flags=(-std=c++20 -gline-tables-only -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -D_GLIBCXX_ASSERTIONS -DGMP_READER_NO_BACKSTOP -DSPDLOG_FMT_EXTERNAL -DFMT_HEADER_ONLY=1
       '-DGPUMEMPROF_VERSION="fuzz"' -Wall -Wextra -Wno-missing-field-initializers
       -Isettings -Iformat -Imodel -Icollector -Itools/reader -Itools/analysis -Itools/gpumemprof)
# Every source of the libraries the readers stand on (settings, format, model), so that moving a
# file between them needs no edit here.
core=(settings/*.cpp format/*.cpp model/*.cpp
      tools/reader/input_file.cpp tools/reader/json_input.cpp)
# The tensor categories: their replay over the fuzzed trace, and what naming their items needs.
categories=(tools/analysis/category_split.cpp tools/analysis/category_levels.cpp tools/analysis/category_json.cpp
            tools/analysis/call_sites.cpp tools/analysis/symbolizer.cpp tools/analysis/elf_symbols.cpp
            tools/analysis/source_lines.cpp tools/reader/attribution_reader.cpp)
sources_fuzz_trace_reader=("${core[@]}" tools/reader/trace_reader.cpp tools/reader/run_directory_reader.cpp
                           tools/reader/summary_figures.cpp tools/reader/trace_replay.cpp tools/reader/progress.cpp
                           "${categories[@]}")
sources_fuzz_oom_bundle=("${core[@]}" tools/reader/oom_bundle_reader.cpp tools/reader/trace_reader.cpp
                         "${categories[@]}" tools/analysis/oom_facts.cpp tools/analysis/oom_advice.cpp tools/gpumemprof/oom_render.cpp
                         tools/gpumemprof/terminal_text.cpp tools/gpumemprof/human_text.cpp)
sources_fuzz_json_writers=("${core[@]}" collector/config.cpp collector/manifest.cpp collector/process_info.cpp collector/launcher_env.cpp
                           collector/oom_bundle.cpp collector/file_io.cpp collector/pyframe_entry.cpp
                           collector/alert_actions.cpp collector/hidden_child.cpp collector/log.cpp
                           collector/owned_file.cpp collector/owned_dir.cpp collector/high_fd.cpp collector/bounded_call.cpp
                           collector/redact.cpp)
sources_fuzz_redact=(collector/redact.cpp)
sources_fuzz_live_file=("${core[@]}" tools/reader/live_reader.cpp tools/reader/job_directory.cpp
                        tools/reader/run_directory_reader.cpp tools/reader/attribution_reader.cpp
                        tools/reader/trace_reader.cpp tools/reader/summary_figures.cpp tools/reader/trace_replay.cpp
                        tools/reader/progress.cpp tools/analysis/call_sites.cpp tools/analysis/symbolizer.cpp
                        tools/analysis/elf_symbols.cpp tools/analysis/source_lines.cpp
                        tools/gpumemprof/top_table.cpp tools/gpumemprof/top_detail.cpp tools/gpumemprof/human_text.cpp
                        tools/gpumemprof/terminal_text.cpp)

build() {
  command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (scripts/setup.sh installs clang)" >&2; exit 1; }
  mkdir -p "$out/obj"
  local t src obj objs pids=()
  # Every source once, in parallel; then one link per target.
  local all=()
  for t in "${targets[@]}"; do
    local -n target_srcs="sources_$t"
    all+=("${target_srcs[@]}" "tests/fuzz/$t.cpp")
  done
  local jobs; jobs="$(nproc)"
  for src in $(printf '%s\n' "${all[@]}" | sort -u); do
    obj="$out/obj/$(echo "$src" | tr / _).o"
    # Up to date: newer than its source and than every header it could include.
    if [ "$obj" -nt "$src" ] && [ "$obj" -nt "$0" ] &&
       [ -z "$(find settings format model collector tools -name '*.h' -newer "$obj" -print -quit)" ]; then
      continue
    fi
    "$cxx" "${flags[@]}" -c "$src" -o "$obj" &
    pids+=($!)
    if ((${#pids[@]} >= jobs)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for t in "${targets[@]}"; do
    local -n srcs="sources_$t"
    objs=()
    for src in "${srcs[@]}" "tests/fuzz/$t.cpp"; do objs+=("$out/obj/$(echo "$src" | tr / _).o"); done
    "$cxx" "${flags[@]}" "${objs[@]}" -o "$out/$t"
    echo "fuzz: built $out/$t"
  done
}

run_one() {  # target: runs it for fuzz_time seconds, its output to $out/<target>.log
  local t="$1"
  mkdir -p "$out/corpus/$t"
  # -rss_limit_mb and -timeout turn runaway memory or a hang into a reported failure.
  "$out/$t" -max_total_time="$fuzz_time" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$t-" "$out/corpus/$t" "tests/fuzz/corpus/$t" >"$out/$t.log" 2>&1
}

run() {
  # The targets run side by side, one per core: the suite's time budget counts wall time.
  local t i status=0 jobs pids=() rcs=()
  jobs="$(nproc)"
  mkdir -p "$out/artifacts"
  echo "fuzz: ${targets[*]}, ${fuzz_time}s each, $jobs at a time"
  for i in "${!targets[@]}"; do
    if ((i >= jobs)); then wait "${pids[i - jobs]}" && rcs[i - jobs]=0 || rcs[i - jobs]=$?; fi
    run_one "${targets[i]}" &
    pids+=($!)
  done
  for i in "${!targets[@]}"; do
    t="${targets[i]}"
    [ -n "${rcs[i]:-}" ] || { wait "${pids[i]}" && rcs[i]=0 || rcs[i]=$?; }
    if [ "${rcs[i]}" != 0 ]; then
      status=1
      echo "fuzz: $t FAILED; the last lines of $out/$t.log:" >&2
      tail -n 40 "$out/$t.log" >&2
      continue
    fi
    # The final line: executions, coverage (cov: edges, ft: features), corpus size, speed.
    echo "fuzz: $t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$out/$t.log" | tail -n 1 | tr -s '[:space:]' ' ')"
  done
  return "$status"
}

case "$mode" in
  --build-only) build ;;
  --run-only) run ;;
  all) build; run ;;
  *) echo "usage: tests/fuzz/build.sh [--build-only|--run-only]" >&2; exit 2 ;;
esac
