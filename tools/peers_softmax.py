"""The peers of tritium's softmax benchmark, timed the way bench_softmax times tritium: CUDA
events, L2 flushed (a memset of twice the L2) before every repetition, median of repetitions,
GB/s = 2*M*N*4/time. Systems: Triton's tutorial fused-softmax kernel, torch.softmax and
torch.compile(torch.softmax); also the device-to-device copy of the same bytes, and the host
time per call and compile time of the Triton kernel.

usage: python3 tools/peers_softmax.py [--quick | --n=LIST] [--rows=M] [--reps=R] > peers.csv
       python3 tools/peers_softmax.py --compile-time   (run in a fresh process)"""
import sys
import time

import torch
import triton
import triton.language as tl
from triton.runtime import driver


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets,
                 numerator / denominator, mask=mask)


PROPS = driver.active.utils.get_device_properties(torch.cuda.current_device())
_compiled = {}


def triton_softmax(x, y):
    """The tutorial's launcher: persistent grid from registers and shared memory."""
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    num_warps, num_stages = 8, (4 if PROPS["max_shared_mem"] > 200000 else 2)
    if block not in _compiled:
        k = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                  BLOCK_SIZE=block, num_stages=num_stages,
                                  num_warps=num_warps, grid=(1,))
        k._init_handles()
        occ = PROPS["max_num_regs"] // (k.n_regs * PROPS["warpSize"] * num_warps)
        if k.metadata.shared:
            occ = min(occ, PROPS["max_shared_mem"] // k.metadata.shared)
        _compiled[block] = (k, PROPS["multiprocessor_count"] * max(occ, 1))
    k, programs = _compiled[block]
    k[(min(programs, n_rows), 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, block,
                                      num_stages)


def time_ms(fn, reps):
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size,
                        dtype=torch.uint8, device="cuda")
    for _ in range(5):
        fn()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.zero_()
        start[i].record()
        fn()
        stop[i].record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in zip(start, stop))
    return ms[len(ms) // 2]


def arg(name, default):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def main():
    if "--compile-time" in sys.argv:
        x = torch.randn(64, 1000, device="cuda")
        y = torch.empty_like(x)
        t0 = time.perf_counter()
        triton_softmax(x, y)
        torch.cuda.synchronize()
        print(f"triton first_call_ms {(time.perf_counter() - t0) * 1e3:.1f}")
        return
    rows, reps = int(arg("rows", 4096)), int(arg("reps", 100))
    if "--quick" in sys.argv:
        ns = [256, 512, 1024, 2048, 4096, 8192, 12288, 16384]
    else:
        ns = [int(n) for n in arg("n", "").split(",")] if arg("n", "") else list(
            range(256, 16385, 128))
    compiled = torch.compile(lambda t: torch.softmax(t, -1))
    print("M,N,triton_GBps,torch_GBps,torch_compile_GBps,copy_GBps", flush=True)
    for n in ns:
        x = torch.randn(rows, n, device="cuda") * 2
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        gb = 2 * x.numel() * 4 / 1e9
        row = [rows, n]
        systems = (("triton", lambda: triton_softmax(x, y) or y),
                   ("torch", lambda: torch.softmax(x, -1)),
                   ("compile", lambda: compiled(x)))
        for name, fn in systems:
            try:
                out = fn()
                err = (out.double() - ref).abs().max().item()
                g = gb / (time_ms(fn, reps) * 1e-3)
                row.append(f"{g:.1f}" if err < 1e-5 else f"wrong({err:.1e})")
            except Exception as e:  # Triton runs out of resources for long rows
                row.append("fail:" + type(e).__name__)
        row.append(f"{gb / (time_ms(lambda: y.copy_(x), reps) * 1e-3):.1f}")
        print(",".join(str(v) for v in row), flush=True)
        del x, y, ref
    x = torch.randn(1, 128, device="cuda")
    y = torch.empty_like(x)
    for name, fn in (("triton", lambda: triton_softmax(x, y)),
                     ("torch", lambda: torch.softmax(x, -1))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5000):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        print(f"# {name} host_us_per_call {(t1 - t0) / 5000 * 1e6:.2f}", flush=True)


if __name__ == "__main__":
    main()
