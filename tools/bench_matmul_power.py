"""The matmul under the GPU's power cap: tritium's, cuBLAS's and Triton's launched back to back.

A large product launched back to back (L2 not flushed between launches, as in a training step)
holds the GPU at its power cap, where the clock settles below the one that the flushed timing of
tools/bench_matmul.py allows in its gaps. For each shape this launches each system back to back
for --seconds (twice, --rounds), while nvidia-smi samples the power draw, the SM clock and the
clock-event reasons every 50 ms, and prints the sustained TFLOP/s with the power and the clock
over each window (its first 0.7 s left out). Systems: tritium (libtritium_kernels_c.so through
ctypes, autotuned on its first call, as tools/bench_matmul.py calls it), cuBLAS (torch.matmul)
and Triton's tutorial-03 kernel (tools/bench_matmul.py's). bf16, A [M, K] and B [K, N]
row-major. docs/notes/tensor-cores.md, "The power cap", reads its figures.

usage: python3 tools/bench_matmul_power.py [--shapes=MxNxK,...] [--seconds=S] [--rounds=R]
           [--no-triton] [--lib=DIR]
Run from the repository root on the GPU machine (docs/BENCHMARKS.md); needs nvidia-smi.
"""
import argparse
import collections
import datetime
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_matmul as bm  # noqa: E402  (the library's binding and the Triton kernel)

torch = bm.torch


def samples(path):
    """nvidia-smi's rows: (time, W, limit W, SM MHz, memory MHz, reasons, temperature)."""
    rows = []
    for line in open(path):
        p = [x.strip() for x in line.split(",")]
        try:  # (nvidia-smi prints local time, as time.time() compares with it)
            ts = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append((ts, float(p[1]), float(p[2]), float(p[3]), float(p[4]), p[5], p[6]))
        except (ValueError, IndexError):
            continue
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192x8192,4096x4096x4096")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--lib", default="device-bundle")
    opts = ap.parse_args(argv)
    if torch is None or not torch.cuda.is_available():
        sys.exit("bench_matmul_power.py needs torch and a GPU")
    log = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench_matmul_power.{os.getpid()}.csv")
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,power.draw,power.limit,clocks.sm,clocks.mem,"
         "clocks_event_reasons.active,temperature.gpu", "--format=csv,noheader,nounits",
         "-lms", "50"], stdout=open(log, "w"))
    time.sleep(1.0)
    tritium = bm.TritiumMatmul(opts.lib)
    windows = []
    for shape in opts.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        systems = [("tritium", tritium.matmul("bf16", a, b, c, 0)),
                   ("cublas", lambda: torch.matmul(a, b, out=c))]
        if not opts.no_triton:
            systems.append(("triton", lambda: bm.triton_matmul(a, b, c)))
        for rnd in range(opts.rounds):
            for name, fn in systems:
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
                time.sleep(1.5)  # (the clock recovers between windows)
                n = 0
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.time()
                e0.record()
                while time.time() - t0 < opts.seconds:
                    for _ in range(20):
                        fn()
                    n += 20
                    torch.cuda.synchronize()
                e1.record()
                torch.cuda.synchronize()
                ms = e0.elapsed_time(e1) / n
                windows.append((shape, name, rnd, t0, time.time(), 2 * M * N * K / ms / 1e9))
                print(f"{shape} {name} round {rnd}: {windows[-1][-1]:.1f} TFLOP/s sustained",
                      file=sys.stderr, flush=True)
        del a, b, c
        torch.cuda.empty_cache()
    time.sleep(0.5)
    smi.terminate()
    smi.wait()
    rows = samples(log)
    os.remove(log)
    print("| shape | system | round | TFLOP/s | W | limit W | SM MHz | memory MHz | reasons | samples |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for shape, name, rnd, t0, t1, tflops in windows:
        sel = [r for r in rows if t0 + 0.7 <= r[0] <= t1 - 0.2]
        if not sel:
            print(f"| {shape} | {name} | {rnd} | {tflops:.1f} | no samples | | | | | 0 |")
            continue
        avg = lambda i: sum(r[i] for r in sel) / len(sel)  # noqa: E731
        reasons = ", ".join(r for r, _ in collections.Counter(r[5] for r in sel).most_common(2))
        print(f"| {shape} | {name} | {rnd} | {tflops:.1f} | {avg(1):.0f} | {avg(2):.0f} | "
              f"{avg(3):.0f} | {avg(4):.0f} | {reasons} | {len(sel)} |")


if __name__ == "__main__":
    main()
