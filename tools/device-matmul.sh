#!/usr/bin/env bash
# On the GPU machine, from the repository root with the bundle (tools/build-device-bundle.sh) in
# device-bundle/: dot's GPU tests, then Triton's tutorial 03 written in tritium
# (examples/matmul) at the peers' shapes and a sweep of tile plans at 4096^3, and, when
# PEERS=FILE names a peer script taking `matmul` (torch's cuBLAS and Triton's tutorial kernel
# as CSV rows kernel,dtype,MxNxK,system,ms,,TFLOP/s), the peers at the same shapes in the same
# run (fp8 e4m3 against torch._scaled_mm, tools/peer_scaled_mm.py). The table comes last; the
# logs go to $OUT (or /tmp/tritium-matmul).
#
# usage: bash tools/device-matmul.sh            PEERS=path/peer_kernels.py bash tools/device-matmul.sh
#        TESTS=0 skips the GPU tests, SWEEP=0 the plan sweep (the default plans only).
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-/tmp/tritium-matmul}
mkdir -p "$O"
cache=$(mktemp -d /tmp/tritium-matmul-cache.XXXXXX)
trap 'rm -rf "$cache"' EXIT
export TRITIUM_CACHE_DIR=$cache LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The peers first, so that a time limit cuts tritium's plan sweep, not them.
if [ -n "${PEERS:-}" ]; then
  python3 "$PEERS" matmul > "$O/peers.csv" 2> "$O/peers.log" || echo "peers exited with $?"
  # fp8: cuBLAS with and without fast accumulation (tritium's wgmma sums fp8 as the fast one).
  python3 tools/peer_scaled_mm.py >> "$O/peers.csv" 2>> "$O/peers.log" || echo "fp8 peers exited with $?"
fi
if [ "${TESTS:-1}" = 1 ]; then
  "$B/tritium_tests" --gtest_filter='Dot*' > "$O/dot-tests.log" 2>&1
  echo "dot GPU tests: exit $?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|Failure|wrong" "$O/dot-tests.log" | head -n 30
fi

run() { # dtype M N K [options]: one line "tritium,dtype,MxNxK,plan,ms,TFLOP/s"
  local dt=$1 m=$2 n=$3 k=$4
  shift 4
  local out
  out=$("$B/matmul" --dtype="$dt" "$@" "$m" "$n" "$k" 2>&1)
  echo "$out" >> "$O/matmul.log"
  local t
  t=$(echo "$out" | sed -n 's/^ *\([0-9.]*\) ms, \([0-9.]*\) TFLOP\/s (\(.*\))$/\1,\2,"\3"/p')
  local wrong
  wrong=$(echo "$out" | sed -n 's/.*: \([0-9]*\) of [0-9]* sampled elements wrong.*/\1/p')
  echo "tritium,$dt,${m}x${n}x${k},${t:-FAILED},wrong=${wrong:-?}"
}
sweep() { # M N K plan...: bf16 at one shape, one line per plan
  local m=$1 n=$2 k=$3
  shift 3
  for plan in "$@"; do
    # shellcheck disable=SC2086
    run bf16 "$m" "$n" "$k" $plan
  done
}
{
  for dt in bf16 fp16; do
    for s in "1024 1024 1024" "4096 4096 4096" "8192 8192 8192" "16 8192 8192" "8192 8192 512"; do
      run $dt $s
    done
  done
  # The same product written with tensor descriptors (TMA copies on Hopper).
  for s in "1024 1024 1024" "4096 4096 4096" "8192 8192 8192" "16 8192 8192" "8192 8192 512"; do
    # shellcheck disable=SC2086
    run bf16 $s --descriptors
  done
  # The kernel library's matmul (kernels/Matmul.h) at the same shapes, on the autotuner's plan.
  for s in "1024 1024 1024" "4096 4096 4096" "8192 8192 8192" "16 8192 8192" "8192 8192 512"; do
    # shellcheck disable=SC2086
    run bf16 $s --library
  done
  for s in "4096 4096 4096" "8192 8192 8192"; do
    # shellcheck disable=SC2086
    run fp8e4m3 $s --library
  done
  # fp8 e4m3 into bf16, B stored [N, K] (as torch._scaled_mm takes it), both forms.
  for s in "4096 4096 4096" "8192 8192 8192"; do
    # shellcheck disable=SC2086
    run fp8e4m3 $s
    # shellcheck disable=SC2086
    run fp8e4m3 $s --descriptors
  done
  if [ "${SWEEP:-1}" = 1 ]; then
    # Plans (tiles, warps, stages) at three shapes: square, the decode shape, a short K. On
    # Hopper the example compiles for sm_90a (wgmma); --arch=sm_90 gives mma.sync.
    sweep 4096 4096 4096 "--tile=128x256x64 --warps=8 --stages=4" \
      "--tile=128x256x64 --warps=8 --stages=3" "--tile=128x256x64 --warps=8 --stages=4 --arch=sm_90" \
      "--tile=256x128x64 --warps=8 --stages=4" "--tile=128x128x64 --warps=8 --stages=5" \
      "--tile=128x128x64 --warps=4 --stages=5" "--tile=128x256x128 --warps=8 --stages=3"
    sweep 8192 8192 8192 "--tile=128x256x64 --warps=8 --stages=4" "--tile=256x128x64 --warps=8 --stages=4"
    sweep 1024 1024 1024 "--tile=128x128x64 --warps=8 --stages=4" "--tile=64x128x64 --warps=4 --stages=4" \
      "--tile=64x64x64 --warps=4 --stages=4" "--tile=128x64x64 --warps=4 --stages=4"
    sweep 16 8192 8192 "--tile=16x64x128 --warps=4 --stages=4" "--tile=16x128x128 --warps=4 --stages=3" \
      "--tile=16x64x256 --warps=4 --stages=3" "--tile=32x64x128 --warps=4 --stages=4"
    sweep 8192 8192 512 "--tile=128x256x64 --warps=8 --stages=4" "--tile=256x128x64 --warps=8 --stages=4" \
      "--tile=128x128x64 --warps=8 --stages=4" "--tile=128x256x128 --warps=8 --stages=3"
  fi
} > "$O/tritium.csv"
echo "--- tritium (dtype, M x N x K, ms, TFLOP/s, plan, wrong)"
cat "$O/tritium.csv"
[ -s "$O/peers.csv" ] && { echo "--- peers"; cat "$O/peers.csv"; }
exit 0
