"""What an L2 flush by memset costs the kernel timed after it (run on the GPU machine).

Flushing L2 by writing a buffer twice its size (tritium's rt::l2Flush, triton.testing.do_bench)
leaves L2 full of dirty lines, which the timed kernel writes back as its own reads evict them.
This times three reads of 134 MB (a copy, cuBLAS's 16 x 8192 x 8192 bf16 product, a sum) after
such a flush, and after the same flush followed by a read-only pass over another buffer, which
leaves L2 clean. CUDA events, medians of 50.

usage: python3 tools/peer_l2_flush.py
"""
import torch


def bench(f, clean, reps=50):
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    other = torch.empty(256 << 20, dtype=torch.int8, device="cuda").fill_(1)
    for _ in range(5):
        f()
    times = []
    for _ in range(reps):
        flush.zero_()
        if clean:  # read-only: the dirty lines are written back before the timed call
            other.sum(dtype=torch.int32)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def main():
    M, N, K = 16, 8192, 8192
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    flat = b.view(-1)
    x = torch.empty(N * K * 2 // 4, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    nbytes = N * K * 2
    for clean in (False, True):
        tc = bench(lambda: y.copy_(x), clean)
        copy = 2 * x.numel() * 4 / tc / 1e6  # bytes read and written, GB/s
        tm = bench(lambda: a @ b, clean)
        ts = bench(lambda: flat.sum(dtype=torch.float32), clean)
        print(f"flush={'memset+read' if clean else 'memset'}: copy {tc * 1000:.1f} us "
              f"{copy:.0f} GB/s | cuBLAS {M}x{N}x{K} {tm * 1000:.1f} us "
              f"{nbytes / tm / 1e6:.0f} GB/s {nbytes / tm / 1e6 / copy:.3f} of copy | "
              f"sum of {nbytes >> 20} MiB {ts * 1000:.1f} us {nbytes / ts / 1e6:.0f} GB/s")


if __name__ == "__main__":
    main()
