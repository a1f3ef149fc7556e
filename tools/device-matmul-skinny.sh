#!/usr/bin/env bash
# On the GPU machine, from the repository root with the bundle (tools/build-device-bundle.sh) in
# device-bundle/: the library's matmul at skinny shapes (fewer tiles than SMs, long K), with a
# workspace (plans may split K: the autotuner's choice, then the planner's) and without, beside
# torch.matmul (tools/peer_matmul.py) in the same run. TESTS=1 first runs the split-K GPU test.
# The table comes last; the logs and the autotuner's records go to $OUT (or
# /tmp/tritium-matmul-skinny).
#
# usage: bash tools/device-matmul-skinny.sh      SHAPES="M N K|M N K" bash tools/device-matmul-skinny.sh
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-/tmp/tritium-matmul-skinny}
mkdir -p "$O"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SHAPES=${SHAPES:-"64 4096 4096|16 4096 4096|128 8192 8192|256 4096 14336|512 512 16384|1024 1024 8192|1024 1024 1024|16 8192 8192"}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt" 2>&1
IFS='|' read -r -a shapes <<< "$SHAPES"
# shellcheck disable=SC2068,SC2086
python3 tools/peer_matmul.py ${shapes[@]} > "$O/peers.csv" 2> "$O/peers.log" || echo "peers exited with $?"
if [ "${TESTS:-0}" = 1 ]; then
  TRITIUM_CACHE_DIR=$(mktemp -d) "$B/tritium_tests" --gtest_filter='DotGpuTest.LibraryMatmulSplitK' \
    > "$O/tests.log" 2>&1
  echo "split-K GPU test: exit $?"
fi
tflops() { # options... M N K: the example's TFLOP/s, or FAILED / WRONG
  local out
  out=$("$B/matmul" --dtype=bf16 "$@" 2>&1)
  echo "$out" >> "$O/matmul.log"
  echo "$out" | grep -q " 0 of [0-9]* sampled elements wrong" || { echo WRONG; return; }
  echo "$out" | sed -n 's/^ *[0-9.]* ms, \([0-9.]*\) TFLOP\/s.*/\1/p' | head -n 1
}
{
  echo "M x N x K, torch, workspace (autotuned), no workspace (autotuned), workspace (planner)"
  for s in "${shapes[@]}"; do
    # shellcheck disable=SC2086
    set -- $s
    cache=$(mktemp -d /tmp/tritium-skinny-cache.XXXXXX)
    torch=$(sed -n "s/^matmul,bf16,$1x$2x$3,torch,[0-9.]*,,\([0-9.]*\)$/\1/p" "$O/peers.csv")
    with=$(TRITIUM_CACHE_DIR=$cache tflops --library "$@")
    without=$(TRITIUM_CACHE_DIR=$cache tflops --library --no-split "$@")
    planner=$(TRITIUM_CACHE_DIR=$cache TRITIUM_AUTOTUNE=0 tflops --library "$@")
    echo "$1x$2x$3, ${torch:-?}, $with, $without, $planner"
    find "$cache" -path '*autotune*' -name '*.json' -exec cat {} + >> "$O/records.json" 2>/dev/null
    rm -rf "$cache"
  done
} > "$O/table.csv"
cat "$O/table.csv"
