#!/usr/bin/env bash
# On the GPU machine, from the repository root with the bundle in device-bundle/: the softmax
# sweep of tritium and its peers in one call, host overhead and compile times, and the plot.
# Writes everything under $OUT (or /tmp/tritium-perf) and prints a short table last.
#
# usage: bash tools/device-perf.sh [SWEEP] [OPTIONS...]
#   SWEEP (default --quick) and OPTIONS go to both bench_softmax and peers_softmax.py (which
#   ignores the options it does not know), e.g.
#     bash tools/device-perf.sh --quick --dtype=bf16 --backward
#     bash tools/device-perf.sh --long --dtype=fp16
#     bash tools/device-perf.sh --quick --order=sequential   (peers_softmax.py's order only)
# The default mode (fp32 forward, no --long) writes tritium.csv, peers.csv, softmax.png and
# host.txt as before; any other mode suffixes its files with -DTYPE-DIRECTION[-long] (e.g.
# tritium-bf16-backward.csv), so several modes can share one $OUT. Host overhead and compile
# times are measured in the default mode only.
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-/tmp/tritium-perf}
mkdir -p "$O"
export TRITIUM_CACHE_DIR=/tmp/tritium-perf-cache PYTHONUNBUFFERED=1
sweep=${1:---quick}
[ $# -gt 0 ] && shift
extra=() peers_only=()
for a in "$@"; do
  case "$a" in
    --order=*) peers_only+=("$a") ;; # how peers_softmax.py orders its timings; not bench's
    *) extra+=("$a") ;;
  esac
done

dtype=fp32 direction=forward long=
for a in $sweep ${extra[@]+"${extra[@]}"}; do
  case "$a" in
    --dtype=*) dtype=${a#--dtype=} ;;
    --backward) direction=backward ;;
    --long) long=-long ;;
  esac
done
suffix=
[ "$dtype-$direction$long" != fp32-forward ] && suffix="-$dtype-$direction$long"

# bench_softmax times tritium against cuMemcpyDtoDAsync in its own process and exports the kernels
# it timed; peers_softmax.py then times those same kernels again next to Triton, torch and
# torch's copy, so that the comparison columns all come from one harness.
rm -rf "$O/kernels$suffix"
$B/bench_softmax $sweep ${extra[@]+"${extra[@]}"} --csv="$O/tritium$suffix.csv" \
  --export="$O/kernels$suffix" > "$O/tritium$suffix.txt" 2> "$O/tritium$suffix.err"
python3 tools/peers_softmax.py $sweep ${extra[@]+"${extra[@]}"} ${peers_only[@]+"${peers_only[@]}"} \
  --tritium="$O/kernels$suffix" \
  > "$O/peers$suffix.csv" 2> "$O/peers$suffix.err"
if [ -z "$suffix" ]; then
  {
    $B/bench_softmax --host-overhead
    # CUDA_CACHE_DISABLE: the driver keeps its own cache of JIT-compiled PTX, which would make a
    # second "cold" measurement warm.
    rm -rf /tmp/tritium-cold && CUDA_CACHE_DISABLE=1 TRITIUM_CACHE_DIR=/tmp/tritium-cold $B/bench_softmax --compile-time
    TRITIUM_CACHE_DIR=/tmp/tritium-cold $B/bench_softmax --compile-time
    python3 tools/peers_softmax.py --compile-time 2>/dev/null
  } > "$O/host.txt" 2>&1
fi
python3 tools/plot_softmax.py "$O/tritium$suffix.csv" "$O/peers$suffix.csv" "$O/softmax$suffix.png"
python3 - "$O" "$suffix" "$dtype" "$direction$long" <<'PY'
import csv, sys
o, suffix, dtype, mode = sys.argv[1:5]

def rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(l for l in f if not l.startswith("#")))
    except FileNotFoundError:
        return []

def num(r, k):
    try:
        return float(r[k])
    except (KeyError, TypeError, ValueError):
        return None

# tritium: the best configuration per N (several when --num-warps/--num-stages/... sweep).
ours = {}
for r in rows(f"{o}/tritium{suffix}.csv"):
    n, t = int(r["N"]), num(r, "tritium_GBps")
    if t is not None and (n not in ours or t > num(ours[n], "tritium_GBps")):
        ours[n] = r
peers = {int(r["N"]): r for r in rows(f"{o}/peers{suffix}.csv")}
print(f"# {dtype} {mode}: GB/s, all timed by peers_softmax.py in one process (tritium through "
      "--tritium); vs best = tritium / best peer, of copy = tritium / torch copy_; bench and "
      "memcpy: bench_softmax's own timing of tritium and cuMemcpyDtoDAsync, and their ratio; "
      "copy1: the same torch copy_ timed before the systems")
print(f"{'N':>6} {'tritium':>8} {'triton':>8} {'torch':>8} {'compile':>8} {'copy':>8} "
      f"{'vs best':>8} {'of copy':>8} {'copy1':>7} | {'bench':>7} {'memcpy':>7} {'ratio':>6}")
for n in sorted(ours):
    b, bc = num(ours[n], "tritium_GBps"), num(ours[n], "copy_GBps")
    p = peers.get(n, {})
    t = num(p, "tritium_GBps")
    cells = [p.get(k) or "-" for k in ("triton_GBps", "torch_GBps", "torch_compile_GBps")]
    best = [g for g in (num(p, k) for k in ("triton_GBps", "torch_GBps", "torch_compile_GBps"))
            if g is not None]
    cp = num(p, "copy_GBps")
    vs = f"{t / max(best):.3f}" if best and t else "-"  # no peer has a number at this N
    of = f"{t / cp:.3f}" if cp and t else "-"
    ts = f"{t:.0f}" if t else (p.get("tritium_GBps") or "-")
    cps = f"{cp:.0f}" if cp else "-"
    ratio = f"{b / bc:.3f}" if b and bc else "-"
    c1 = p.get("copy_first_GBps") or "-"
    print(f"{n:>6} {ts:>8} {cells[0]:>8} {cells[1]:>8} {cells[2]:>8} {cps:>8} {vs:>8} {of:>8} "
          f"{c1:>7} | "
          f"{b:>7.0f} {bc or 0:>7.0f} {ratio:>6}")
PY
if [ -z "$suffix" ]; then
  grep -h "_us_\|_us \|_ms" "$O/host.txt" "$O/peers.csv"
fi
