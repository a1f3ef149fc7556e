"""torch.matmul (cuBLAS) at the shapes given on the command line, timed as the shared peer script
times its kernels (triton.testing.do_bench: median, L2 cleared between repetitions), as CSV rows
kernel,dtype,MxNxK,system,ms,,TFLOP/s. B is [K, N], or stored [N, K] and read transposed with
--b-nk (nn.Linear's weights).

usage: python3 tools/peer_matmul.py [--dtype=bf16|fp16] [--b-nk] M N K [M N K ...] >> peers.csv
"""
import sys

import torch
import triton

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = [a for a in sys.argv[1:] if a.startswith("--")]
dtype = "bf16"
for f in flags:
    if f.startswith("--dtype="):
        dtype = f[len("--dtype="):]
torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
b_nk = "--b-nk" in flags
if len(args) % 3 != 0 or not args:
    sys.exit(__doc__)
for i in range(0, len(args), 3):
    M, N, K = (int(v) for v in args[i:i + 3])
    a = torch.randn(M, K, device="cuda", dtype=torch_dtype)
    b = torch.randn(N, K, device="cuda", dtype=torch_dtype).t() if b_nk else \
        torch.randn(K, N, device="cuda", dtype=torch_dtype)
    ms = triton.testing.do_bench(lambda: a @ b, warmup=25, rep=200, return_mode="median")
    print(f"matmul,{dtype},{M}x{N}x{K},torch,{ms:.5f},,{2 * M * N * K / ms / 1e9:.1f}", flush=True)
