#!/usr/bin/env bash
# Installs tritium's dependencies (Debian 12 packages), builds it, and runs the main job: the
# fused softmax example. On a GPU it runs and checks; without one it compiles, writes the cache
# entry and says why it did not launch. The CUDA toolkit is expected at /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# LLVM 22 comes from bookworm-security; FileCheck and lit are in llvm-22-tools. pkgconf: for
# tools/ci-consumer.sh, which builds a program against the installed tritium with pkg-config.
$SUDO apt-get install -y -q --no-install-recommends \
  cmake ninja-build g++ llvm-22-dev llvm-22-tools libspdlog-dev libfmt-dev libgtest-dev \
  zlib1g-dev libzstd-dev python3 pkgconf

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
./build/examples/fused_softmax
