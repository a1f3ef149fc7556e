"""Plots GB/s against N, one line per system, the copy bandwidth as the ceiling. Reads the CSVs
of bench_softmax and peers_softmax.py, old (fp32 forward, no dtype/direction columns) or new;
the title and labels follow their dtype and direction. Rows beyond 16384 (--long) get a log-2
N axis.
usage: python3 tools/plot_softmax.py tritium.csv peers.csv out.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    try:
        with open(path) as f:
            return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    except FileNotFoundError:
        print(f"plot_softmax: {path} not found, plotting without it", file=sys.stderr)
        return []


def series(rows, key):
    pts = []
    for r in rows:
        try:
            pts.append((int(r["N"]), float(r[key])))
        except (ValueError, KeyError, TypeError):
            pass  # failed, wrong or missing points are left out
    return sorted(pts)


def best_per_n(rows, key):
    best = {}
    for n, g in series(rows, key):
        best[n] = max(best.get(n, 0), g)
    return best


def column(rows, key, default):
    """The one value of `key` in these rows (the default for old CSVs without the column)."""
    values = {r.get(key) for r in rows if r.get(key)}
    if len(values) > 1:
        print(f"plot_softmax: mixed {key} values {sorted(values)}", file=sys.stderr)
    return "/".join(sorted(values)) if values else default


def main():
    ours, peers, out = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
    dtype = column(ours, "dtype", None) or column(peers, "dtype", "fp32")
    direction = column(ours, "direction", None) or column(peers, "direction", "forward")
    backward = direction == "backward"
    ms = {r.get("M") for r in ours + peers if r.get("M")}
    # tritium timed by peers_softmax.py --tritium (one harness for all), else by bench_softmax.
    best = best_per_n(peers, "tritium_GBps") or best_per_n(ours, "tritium_GBps")
    plt.figure(figsize=(10, 6))
    plt.plot(sorted(best), [best[n] for n in sorted(best)], label="tritium", linewidth=2.5)
    labels = (("triton_GBps", "Triton (tutorial-style backward kernel)" if backward
               else "Triton 3.6 tutorial"),
              ("torch_GBps", "aten._softmax_backward_data" if backward else "torch.softmax"),
              ("torch_compile_GBps", "torch.compile"))
    for key, label in labels:
        pts = series(peers, key)
        if pts:
            plt.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
    copy = best_per_n(peers, "copy_GBps") or best_per_n(ours, "copy_GBps")
    plt.plot(sorted(copy), [copy[n] for n in sorted(copy)], "k--",
             label="copy bandwidth (ceiling)")
    if len(ms) == 1:
        rows_label = f"M = {ms.pop()}"
    else:
        rows_label = "M per N (see CSV)"
    all_n = list(best) + list(copy)
    if all_n and max(all_n) > 16384:
        plt.xscale("log", base=2)
        if len(ms) > 1:
            rows_label = "M = 2^30 bytes / (N x bytes)"
    plt.xlabel(f"N (columns), {rows_label}, {dtype}")
    plt.ylabel("GB/s (3 x M x N x bytes / time: o, dout read, dx written)" if backward
               else "GB/s (read + write)")
    plt.title("Fused softmax on the H200" if (dtype, direction) == ("fp32", "forward")
              else f"Fused softmax {direction}, {dtype}, on the H200")
    plt.grid(alpha=0.3)
    plt.legend()
    plt.savefig(out, dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()
