"""Plots GB/s against N, one line per system, the copy bandwidth as the ceiling.
usage: python3 tools/plot_softmax.py tritium.csv peers.csv out.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path) as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]


def series(rows, key):
    pts = []
    for r in rows:
        try:
            pts.append((int(r["N"]), float(r[key])))
        except (ValueError, KeyError):
            pass  # failed or wrong points are left out
    return sorted(pts)


def main():
    ours, peers, out = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
    best = {}
    for n, g in series(ours, "tritium_GBps"):
        best[n] = max(best.get(n, 0), g)
    plt.figure(figsize=(10, 6))
    plt.plot(sorted(best), [best[n] for n in sorted(best)], label="tritium", linewidth=2.5)
    for key, label in (("triton_GBps", "Triton 3.6 tutorial"), ("torch_GBps", "torch.softmax"),
                       ("torch_compile_GBps", "torch.compile")):
        pts = series(peers, key)
        plt.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
    copy = series(peers, "copy_GBps")
    plt.plot([p[0] for p in copy], [p[1] for p in copy], "k--", label="copy (ceiling)")
    plt.xlabel("N (columns), M = 4096, fp32")
    plt.ylabel("GB/s (read + write)")
    plt.title("Fused softmax on the H200")
    plt.grid(alpha=0.3)
    plt.legend()
    plt.savefig(out, dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()
