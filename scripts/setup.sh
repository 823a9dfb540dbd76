#!/usr/bin/env bash
# Installs what building and testing gpumemprof needs, from Debian packages. Idempotent: installs
# only what is missing, and does nothing when everything is present.
set -euo pipefail

packages=(
  g++ cmake ninja-build make python3
  python3-pytest              # tests/python: the Python package's tests (ctest python_package)
  nlohmann-json3-dev libspdlog-dev libfmt-dev libunwind-dev
  libamdhip64-dev libhsa-runtime-dev  # ROCm headers: the HIP/HSA interposition and the fake HIP runtime
  libgtest-dev libgmock-dev libbenchmark-dev
  libncurses-dev tmux         # gpumemprof top's screen (static libncursesw.a), and its test (live_top_test.cpp)
  chromium fonts-dejavu-core  # headless rendering of the HTML report (tests/html)
  nodejs                      # node --check of the report's script (tests/html)
  clang libclang-rt-dev       # the libFuzzer targets (tests/fuzz/): -fsanitize=fuzzer needs compiler-rt
  debootstrap                 # tests/portability: an old Debian root file system for old_distro_demo
  dpkg-dev groff-base         # tests/install: dpkg-shlibdeps on the .deb's binaries, the man page rendered
  prometheus-node-exporter prometheus  # metrics_test.cpp: the textfile collector, and promtool
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The CUDA toolkit provides the driver API headers only; nothing links against it.
cuda_root="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "setup: CUDA toolkit headers not found at $cuda_root/include/cuda.h; install the CUDA toolkit or set CUDA_HOME" >&2
  exit 1
fi
