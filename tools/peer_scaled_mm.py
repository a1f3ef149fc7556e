"""torch._scaled_mm (cuBLAS's fp8 GEMM) with fast accumulation on and off, timed as the shared
peer script times its kernels (triton.testing.do_bench: median, L2 cleared between
repetitions), as CSV rows kernel,dtype,MxNxK,system,ms,,TFLOP/s. tritium's fp8 dots on wgmma sum
products in the tensor cores' own precision, as cuBLAS's fast accumulation does; the default
(use_fast_accum=False) adds partial sums in fp32 every so often.

usage: python3 tools/peer_scaled_mm.py >> peers.csv
"""
import torch
import triton

for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192)]:
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    for fast in (False, True):
        f = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                     use_fast_accum=fast)
        ms = triton.testing.do_bench(f, warmup=25, rep=200, return_mode="median")
        system = "torch-fast-accum" if fast else "torch"
        print(f"matmul,fp8e4m3,{M}x{N}x{K},{system},{ms:.5f},,{2 * M * N * K / ms / 1e9:.1f}",
              flush=True)
