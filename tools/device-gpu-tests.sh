#!/usr/bin/env bash
# The GPU tests on the GPU machine, split over SHARDS processes that share the GPU (GoogleTest's
# sharding; default 5: 321 s on an H200 for the whole suite, 2026-11-29), each with its own
# kernel cache. Prints each shard's counts, then every failed and skipped test, and
# exits non-zero if a shard failed. Run from the repository root with the bundle beside it
# (docs/DEVICE.md):
#
#   bash tools/device-gpu-tests.sh                  # every GPU test
#   FILTER='Attention*Gpu*' bash tools/device-gpu-tests.sh
#
# BUNDLE (default device-bundle), OUT (the shards' logs; default a temporary folder), SHARDS,
# FILTER (a --gtest_filter; default '*Gpu*'), LIMIT (seconds per shard; default 900), SLOW (with
# the default FILTER: tests that run in a process of their own beside the shards, so that no
# shard holds two of them; default the three slowest, 45-250 s each on an H200 alone).
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-$(mktemp -d /tmp/tritium-gpu-tests.XXXXXX)}
N=${SHARDS:-5}
mkdir -p "$O"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$B/tritium_tests" ] || { echo "no $B/tritium_tests: bash tools/build-device-bundle.sh" >&2; exit 2; }
start=$SECONDS
F=${FILTER:-*Gpu*}
slow=""
if [ -z "${FILTER:-}" ]; then
  slow=${SLOW-KernelLibraryGpuTest.EveryCandidatePlanIsCorrect:DotGpuTest.LibraryMatmulPersistent:AttentionGpuTest.Backward}
fi
shards=()
for ((i = 0; i < N; i++)); do shards+=("$i"); done
[ -n "$slow" ] && shards+=("slow")
for i in "${shards[@]}"; do
  (
    cache=$(mktemp -d /tmp/tritium-gpu-tests-cache.XXXXXX)
    if [ "$i" = slow ]; then
      TRITIUM_CACHE_DIR=$cache timeout "${LIMIT:-900}" "$B/tritium_tests" \
        --gtest_filter="$slow" > "$O/shard$i.log" 2>&1
    else
      TRITIUM_CACHE_DIR=$cache GTEST_TOTAL_SHARDS=$N GTEST_SHARD_INDEX=$i \
        timeout "${LIMIT:-900}" "$B/tritium_tests" --gtest_filter="$F${slow:+-$slow}" \
        > "$O/shard$i.log" 2>&1
    fi
    echo $? > "$O/shard$i.rc"
    rm -rf "$cache"
  ) &
done
wait
status=0
for i in "${shards[@]}"; do
  rc=$(cat "$O/shard$i.rc")
  counts=$(grep -aE '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$O/shard$i.log" |
    sed 's/, listed below://' | tr -s ' ' | tr '\n' ' ')
  echo "shard $i: exit $rc ${counts:-(no summary: see $O/shard$i.log)}"
  [ "$rc" = 0 ] || status=1
done
# Each failed or skipped test once (GoogleTest names it as it ends and again in its summary).
grep -ahE '^\[ +(FAILED|SKIPPED) +\] [A-Za-z0-9_]+\.[A-Za-z0-9_/]+' "$O"/shard*.log |
  sed 's/ ([0-9]* ms)$//' | sort -u
echo "$((SECONDS - start)) s; logs in $O"
exit $status
