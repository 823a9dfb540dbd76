#!/usr/bin/env bash
# Configures and builds into build/ (or $BUILD_DIR). Extra arguments are build targets.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" >/dev/null
if (($#)); then
  cmake --build "$build" --target "$@"
else
  cmake --build "$build"
fi
