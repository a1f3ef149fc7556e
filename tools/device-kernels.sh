#!/usr/bin/env bash
# On the GPU machine, from the repository root with the bundle (libtritium_kernels_c.so beside
# libtritium.so) in device-bundle/: tritium's kernels beside torch, torch.compile, Triton and the
# copy, all timed in one process by tools/bench_kernels.py; then the plot, and the summary table
# printed last. See docs/BENCHMARKS.md.
#
# usage: bash tools/device-kernels.sh [KERNEL...] [OPTIONS...]     (bench_kernels.py's, e.g.)
#   bash tools/device-kernels.sh --quick --no-compile      every kernel, a first look (~2 min)
#   bash tools/device-kernels.sh layernorm                 one family, every size, torch.compile
# Writes four files under $OUT (or /tmp/tritium-kernels), named after the kernels asked for:
#   kernels[-NAMES].csv  the measurements     kernels[-NAMES].png  the plot
#   kernels[-NAMES].log  progress, and why a row is wrong, failed or refused (the peer guard)
#   kernels[-NAMES]-autotune.tgz  the autotuner's records: each candidate plan's time per shape
# (few files, so that a remote runner that copies back a handful of files brings them all back).
# BUNDLE=DIR names another bundle;
# TIME_LIMIT=S (default 450) the seconds after which no new shape starts.
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-/tmp/tritium-kernels}
mkdir -p "$O"
# A fresh kernel cache: every run includes tritium's compiles, none reuses an older build's.
cache=$(mktemp -d /tmp/tritium-kernels-cache.XXXXXX)
trap 'rm -rf "$cache"' EXIT
export TRITIUM_CACHE_DIR=$cache PYTHONUNBUFFERED=1

names=()
for a in "$@"; do
  case "$a" in
    -*) ;;
    *) names+=("$a") ;;
  esac
done
tag=kernels
[ ${#names[@]} -gt 0 ] && tag="kernels-$(IFS=-; echo "${names[*]}")"

# A GPU runner may stop a command at 10 minutes: no new shape starts after 450 s (TIME_LIMIT), so
# that the plot and the table still come. A later --time-limit among the options wins.
python3 tools/bench_kernels.py --lib="$B" --time-limit="${TIME_LIMIT:-450}" -o "$O/$tag.csv" \
  "$@" > "$O/$tag.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  echo "bench_kernels.py exited with $rc; the end of $O/$tag.log:"
  tail -n 25 "$O/$tag.log"
fi
# Why any row is wrong, failed or refused, then the plot and the table from the CSV (whatever it
# holds, also after a crash part-way).
grep -E "^(WRONG|FAILED|REFUSED) |time-limit" "$O/$tag.log" | cut -c1-400 | head -n 40
# The autotuner's records (every candidate plan's time per shape) as one file beside the CSV.
[ -d "$cache/autotune" ] && tar -czf "$O/$tag-autotune.tgz" -C "$cache" autotune
[ -s "$O/$tag.csv" ] || exit 1
python3 tools/bench_kernels.py --from-csv="$O/$tag.csv" --plot="$O/$tag.png"
exit $rc
