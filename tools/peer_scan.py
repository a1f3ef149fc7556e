"""Row cumsums by torch.cumsum and by a Triton kernel in the style of its tutorials (tl.cumsum
over BM x N tiles), timed as the shared peer script times its kernels
(triton.testing.do_bench: median, L2 cleared between repetitions), as CSV rows
kernel,dtype,MxN,system,ms,GB/s, for the same shapes as tools/bench_scan.cpp.

usage: python3 tools/peer_scan.py [M N BM ...] > peers.csv
       python3 tools/peer_scan.py --long N ... > peers.csv   (torch.cumsum of N flat fp32)
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def cumsum_rows(out_ptr, x_ptr, M, N: tl.constexpr, BM: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, N)
    offs = rows[:, None] * N + cols[None, :]
    inside = rows[:, None] < M
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs, mask=inside, other=0), 1), mask=inside)


def main():
    if sys.argv[1:2] == ["--long"]:  # torch.cumsum of a flat fp32 tensor (bench_scan --long)
        for n in (int(a) for a in sys.argv[2:]):
            x = torch.randn(n, device="cuda")
            out = torch.empty_like(x)
            ms = triton.testing.do_bench(lambda: torch.cumsum(x, 0, out=out), warmup=25, rep=200,
                                         return_mode="median")
            print(f"cumsum1d,fp32,{n},torch,{ms:.5f},{2 * n * 4 / ms / 1e6:.1f}", flush=True)
        return
    args = [int(a) for a in sys.argv[1:]] or [65536, 2048, 16, 16384, 8192, 4]
    for i in range(0, len(args), 3):
        M, N, BM = args[i:i + 3]
        for name, dtype in (("fp32", torch.float32), ("i32", torch.int32)):
            x = (torch.randn(M, N, device="cuda") if dtype == torch.float32
                 else torch.randint(-1000, 1000, (M, N), device="cuda", dtype=torch.int32))
            out = torch.empty_like(x)
            moved = 2 * x.numel() * 4
            ms = triton.testing.do_bench(lambda: torch.cumsum(x, 1, out=out), warmup=25, rep=200,
                                         return_mode="median")
            print(f"scan,{name},{M}x{N},torch,{ms:.5f},{moved / ms / 1e6:.1f}", flush=True)
            try:
                grid = (triton.cdiv(M, BM),)
                cumsum_rows[grid](out, x, M, N=N, BM=BM, num_warps=8)
                ref = torch.cumsum(x.double() if dtype == torch.float32 else x, 1)
                ok = (torch.allclose(out.double(), ref, rtol=1e-4, atol=1e-2) if dtype == torch.float32
                      else torch.equal(out, ref.to(out.dtype)))
                ms = triton.testing.do_bench(lambda: cumsum_rows[grid](out, x, M, N=N, BM=BM, num_warps=8),
                                             warmup=25, rep=200, return_mode="median")
                print(f"scan,{name},{M}x{N},triton,{ms:.5f},{moved / ms / 1e6:.1f}"
                      + ("" if ok else ",WRONG"), flush=True)
            except Exception as e:  # a tile Triton cannot compile is a result too
                print(f"scan,{name},{M}x{N},triton,FAILED,{type(e).__name__}", flush=True)


main()
