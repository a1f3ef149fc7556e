"""torch SDPA's attention forward at shapes the anchors' script does not time (run on the GPU
machine), e.g. head_dim 64 at 16 x 16 x 1024.

usage: python3 tools/peer_sdpa_forward.py ZxHxSxDxC ...   (C: 1 causal, 0 not; bf16)
Prints one line per shape: ms (median of triton.testing.do_bench, warmup 25, rep 200, as
peer_kernels.py times) and TFLOP/s (4 Z H S^2 D, halved when causal).
"""
import sys

import torch
import triton

sdpa = torch.nn.functional.scaled_dot_product_attention
for spec in sys.argv[1:]:
    Z, H, S, D, c = (int(x) for x in spec.split("x"))
    q, k, v = (torch.randn(Z, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ms = triton.testing.do_bench(lambda: sdpa(q, k, v, is_causal=bool(c)), warmup=25, rep=200,
                                 return_mode="median")
    fl = 4 * Z * H * S * S * D / (2 if c else 1)
    print(f"sdpa {Z}x{H}x{S}x{D}{' causal' if c else ''}: {ms:.3f} ms, {fl / ms / 1e9:.1f} TFLOP/s")
