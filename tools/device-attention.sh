#!/usr/bin/env bash
# On the GPU machine, from the repository root with the bundle (tools/build-device-bundle.sh) in
# device-bundle/: the library's attention forward (examples/attention) at the peers' shapes,
# plain and causal, and, when PEERS=FILE names a peer script taking `attention` (torch's SDPA
# and Triton's tutorial 06 as CSV rows kernel,dtype,ZxHxSxD,system,ms,,TFLOP/s), the peers at
# the same shapes in the same run. The table comes last; the logs go to $OUT (or
# /tmp/tritium-attention).
#
# usage: bash tools/device-attention.sh            PEERS=path/peer_kernels.py bash tools/device-attention.sh
#        DECODE=1 adds the decode runs (examples/attention --decode), BACKWARD=1 the backward's
#        (--backward, and with PEERS SDPA's backward at head_dim 256 from
#        tools/peer_attention_backward.py), FP8=1 the fp8 forward with V transposed, and
#        SKIP_FORWARD=1 leaves out the forward's. PLANS="64x128x4x2 128x128x8x2ws ..." also runs
#        every bf16 forward shape (and FP8's) with each --plan, beside the planner's plan, and
#        BACKWARD_PLANS="64x64x4x2 ..." each backward shape with each --backward-plan.
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-/tmp/tritium-attention}
mkdir -p "$O"
cache=$(mktemp -d /tmp/tritium-attention-cache.XXXXXX)
trap 'rm -rf "$cache"' EXIT
export TRITIUM_CACHE_DIR=$cache LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The peers first, so that a time limit cuts tritium's runs, not them; SDPA also at head_dim
# 64 on short sequences, which the anchors' script leaves out.
if [ -n "${PEERS:-}" ]; then
  python3 "$PEERS" attention ${PEER_KINDS:-} > "$O/peers.csv" 2> "$O/peers.log" || echo "peers exited with $?"
  [ "${SKIP_FORWARD:-0}" = 1 ] ||
    python3 "$(dirname "$0")/peer_sdpa_forward.py" 16x16x1024x64x0 16x16x1024x64x1 >> "$O/peers.csv" 2>> "$O/peers.log"
fi
run() { # dtype Z H S D [options]: one line "tritium,dtype,ZxHxSxD,options,ms,TFLOP/s,wrong"
  local dt=$1 z=$2 h=$3 s=$4 d=$5
  shift 5
  local out
  out=$("$B/attention" --dtype="$dt" "$@" "$z" "$h" "$s" "$d" 2>&1)
  echo "$out" >> "$O/attention.log"
  local t
  t=$(echo "$out" | sed -n 's/^ *\([0-9.]*\) ms, \([0-9.]*\) TFLOP\/s$/\1,\2/p')
  local wrong
  wrong=$(echo "$out" | sed -n 's/.*: \([0-9]*\) of [0-9]* sampled elements wrong.*/\1/p')
  echo "tritium,$dt,${z}x${h}x${s}x${d},$*,${t:-FAILED},wrong=${wrong:-?}"
}
shapes=("4 32 4096 64" "16 16 1024 64" "4 32 4096 128" "16 16 1024 128" "1 32 16384 128")
[ "${SKIP_FORWARD:-0}" = 1 ] || {
  for dt in bf16 fp16; do
    for s in "${shapes[@]}"; do
      # shellcheck disable=SC2086
      run $dt $s
    done
  done
  for s in "${shapes[@]}"; do
    for plan in "" ${PLANS:-}; do
      # shellcheck disable=SC2086
      run bf16 $s --causal ${plan:+--plan=$plan}
      # shellcheck disable=SC2086
      [ -n "$plan" ] && run bf16 $s --plan=$plan
    done
  done
  if [ "${FP8:-0}" = 1 ]; then
    for s in "4 32 4096 64" "4 32 4096 128" "16 16 1024 128"; do
      for plan in "" ${PLANS:-}; do
        # shellcheck disable=SC2086
        run fp8e4m3 $s --v-transposed ${plan:+--plan=$plan}
      done
    done
  fi
} > "$O/tritium.csv"
# The backward (BACKWARD=1): the forward's shapes again with --backward, whose second line is
# the backward's time (2.5 times the forward's FLOPs).
backward() { # dtype Z H S D [options]: "backward,dtype,ZxHxSxD,options,ms,TFLOP/s"
  local dt=$1 z=$2 h=$3 s=$4 d=$5
  shift 5
  local out
  out=$("$B/attention" --backward --dtype="$dt" "$@" "$z" "$h" "$s" "$d" 2>&1)
  echo "$out" >> "$O/backward.log"
  local t
  t=$(echo "$out" | sed -n 's/^ *backward \([0-9.]*\) ms, \([0-9.]*\) TFLOP\/s$/\1,\2/p')
  echo "backward,$dt,${z}x${h}x${s}x${d},$*,${t:-FAILED}"
}
if [ "${BACKWARD:-0}" = 1 ]; then
  # SDPA's backward at head_dim 256, which the anchors' script leaves out.
  [ -n "${PEERS:-}" ] && python3 "$(dirname "$0")/peer_attention_backward.py" 256 >> "$O/peers.csv" 2>> "$O/peers.log"
  for s in "4 32 4096 64" "4 32 4096 128" "4 32 4096 256"; do
    for plan in "" ${BACKWARD_PLANS:-}; do
      # shellcheck disable=SC2086
      backward bf16 $s ${plan:+--backward-plan=$plan}
      # shellcheck disable=SC2086
      backward bf16 $s --causal ${plan:+--backward-plan=$plan}
    done
  done > "$O/backward.csv"
fi
# Decode (DECODE=1): one token per sequence, 32 query heads on 8 KV heads, head_dim 128,
# contiguous and paged caches, against a copy of the cache's bytes.
decode() { # Z S [options]: "decode,bf16,ZxS,options,ms,GB/s,copy GB/s,of copy,wrong"
  local z=$1 s=$2
  shift 2
  local out
  out=$("$B/attention" --decode --kv-heads=8 "$@" "$z" 32 "$s" 128 2>&1)
  echo "$out" >> "$O/decode.log"
  local t
  t=$(echo "$out" | sed -n 's/^ *\([0-9.]*\) ms, \([0-9]*\) GB\/s, copy \([0-9]*\) GB\/s, \([0-9.]*\) of copy$/\1,\2,\3,\4/p')
  local wrong
  wrong=$(echo "$out" | sed -n 's/.*: \([0-9]*\) of [0-9]* sampled elements wrong.*/\1/p')
  echo "decode,bf16,${z}x${s},$*,${t:-FAILED},wrong=${wrong:-?}"
}
if [ "${DECODE:-0}" = 1 ]; then
  {
    for zs in "1 4096" "1 131072" "8 32768" "64 4096"; do
      # shellcheck disable=SC2086
      decode $zs
      # shellcheck disable=SC2086
      decode $zs --page=16
    done
  } > "$O/decode.csv"
fi
echo "--- tritium (dtype, Z x H x S x D, options, ms, TFLOP/s, wrong)"
cat "$O/tritium.csv"
[ -s "$O/backward.csv" ] && { echo "--- backward (dtype, Z x H x S x D, options, ms, TFLOP/s)"; cat "$O/backward.csv"; }
[ -s "$O/decode.csv" ] && { echo "--- decode (Z x S, options, ms, GB/s, copy GB/s, of copy, wrong)"; cat "$O/decode.csv"; }
[ -s "$O/peers.csv" ] && { echo "--- peers"; cat "$O/peers.csv"; }
exit 0
