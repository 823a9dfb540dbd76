#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: the recording side's unit tests under
# AddressSanitizer+UBSan and ThreadSanitizer, then every test (unit, fake driver, integration
# through the preloaded shim) with CTest, then the build as packagers run it (CMake's default
# generator, Release, no tests: the man page must be made there too), then a short run of the
# libFuzzer targets (tests/fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
# Each phase's minutes, for keeping the whole under CI's budget (docs/testing.md).
started=$SECONDS
phase() { echo "== [$(( (SECONDS - started) / 60 )) min] $1"; }

scripts/setup.sh

sanitize() {  # name, flags
  local dir="build-$1"
  phase "unit tests under $1 sanitizer"
  # -g1: line tables are all a sanitizer report needs, and full debug info is slow to compile.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1" \
    -DCMAKE_CXX_FLAGS="-fsanitize=$2 -fno-omit-frame-pointer -fno-sanitize-recover=all" >/dev/null
  cmake --build "$dir" --target sanitized_unit_tests -j "$jobs" >/dev/null
  "$dir/tests/bin/sanitized_unit_tests" --gtest_brief=1
}
ASAN_OPTIONS=detect_leaks=1 sanitize asan address,undefined
TSAN_OPTIONS=halt_on_error=1 sanitize tsan thread

phase "full suite"
scripts/build.sh
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)

phase "the standard build: CMake's default generator, Release, no tests (as packagers build)"
rm -rf build-standard
cmake -S . -B build-standard -DCMAKE_BUILD_TYPE=Release -DGPUMEMPROF_BUILD_TESTS=OFF \
  -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" >/dev/null
cmake --build build-standard -j "$jobs" >/dev/null
test -s build-standard/share/man/man1/gpumemprof.1
rm -rf build-standard

phase "fuzz targets (short run)"
tests/fuzz/build.sh
phase "done"
