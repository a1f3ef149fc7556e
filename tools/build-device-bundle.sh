#!/usr/bin/env bash
# Builds tritium with LLVM linked statically and installs stripped binaries into one folder
# (default: device-bundle/) that runs on a GPU machine without LLVM: libtritium.so, the example,
# tritiumc, the benchmark and the test binary, each finding libtritium.so beside it. That folder
# is the install component device_bundle (cmake/TritiumInstall.cmake), which a normal
# `cmake --install` leaves out.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-device-bundle}"
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_STATIC_LLVM=ON >/dev/null
cmake --build build-device
rm -rf "$out"
cmake --install build-device --component device_bundle --prefix "$out" --strip >/dev/null
du -sh "$out"
