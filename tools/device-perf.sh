#!/usr/bin/env bash
# On the GPU machine, from the repository root with the bundle in device-bundle/: the softmax
# sweep of tritium and its peers in one call, host overhead and compile times, and the plot.
# Writes everything under $OUT (or /tmp/tritium-perf) and prints a short table last.
set -uo pipefail
B=${BUNDLE:-device-bundle}
O=${OUT:-/tmp/tritium-perf}
mkdir -p "$O"
export TRITIUM_CACHE_DIR=/tmp/tritium-perf-cache PYTHONUNBUFFERED=1
sweep=${1:---quick}
$B/bench_softmax $sweep --csv="$O/tritium.csv" > "$O/tritium.txt" 2> "$O/tritium.err"
python3 tools/peers_softmax.py $sweep > "$O/peers.csv" 2> "$O/peers.err"
{
  $B/bench_softmax --host-overhead
  # CUDA_CACHE_DISABLE: the driver keeps its own cache of JIT-compiled PTX, which would make a
  # second "cold" measurement warm.
  rm -rf /tmp/tritium-cold && CUDA_CACHE_DISABLE=1 TRITIUM_CACHE_DIR=/tmp/tritium-cold $B/bench_softmax --compile-time
  TRITIUM_CACHE_DIR=/tmp/tritium-cold $B/bench_softmax --compile-time
  python3 tools/peers_softmax.py --compile-time 2>/dev/null
} > "$O/host.txt" 2>&1
python3 tools/plot_softmax.py "$O/tritium.csv" "$O/peers.csv" "$O/softmax.png"
python3 - "$O" <<'PY'
import csv, sys
o = sys.argv[1]
ours = {int(r["N"]): r for r in csv.DictReader(open(f"{o}/tritium.csv"))}
print(f"{'N':>6} {'tritium':>8} {'triton':>8} {'torch':>8} {'compile':>8} {'copy':>8} {'vs best':>8} {'of copy':>8}")
for r in csv.DictReader(l for l in open(f"{o}/peers.csv") if not l.startswith("#")):
    n = int(r["N"])
    if n not in ours:
        continue
    t = float(ours[n]["tritium_GBps"])
    peers = []
    for k in ("triton_GBps", "torch_GBps", "torch_compile_GBps"):
        try:
            peers.append(float(r[k]))
        except ValueError:
            pass
    best = max(peers)
    cp = float(r["copy_GBps"])
    print(f"{n:>6} {t:>8.0f} {r['triton_GBps']:>8} {r['torch_GBps']:>8} {r['torch_compile_GBps']:>8} {cp:>8.0f} {t/best:>8.3f} {t/cp:>8.3f}")
PY
grep -h "_us_\|_ms" "$O/host.txt" "$O/peers.csv"
