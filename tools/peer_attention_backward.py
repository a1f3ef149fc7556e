"""torch SDPA's attention backward at the library's benchmark shapes (run on the GPU machine).

The anchors' script (peer_kernels.py attention_more) times SDPA's backward at head_dim 64 and
128; this times it at any head dims, 256 among them, the same way: dQ, dK and dV through
torch.autograd.grad of scaled_dot_product_attention, triton.testing.do_bench's median (its L2
flush between repetitions), FLOPs as FlashAttention counts them (2.5 times the forward's 4 Z H
S^2 D, halved when causal). Prints CSV rows as peer_kernels.py does:
kernel,dtype,ZxHxSxD,system,ms,,TFLOP/s.

usage: python3 tools/peer_attention_backward.py [D ...]      (default: 64 128 256)
"""
import sys

import torch
import triton.testing


def main():
    dims = [int(a) for a in sys.argv[1:]] or [64, 128, 256]
    sdpa = torch.nn.functional.scaled_dot_product_attention
    Z, H, S = 4, 32, 4096
    for D in dims:
        for causal in (False, True):
            q, k, v = (torch.randn(Z, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            o = sdpa(q, k, v, is_causal=causal)
            do = torch.randn_like(o)
            ms = triton.testing.do_bench(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True),
                                         warmup=25, rep=200, return_mode="median")
            flops = 2.5 * 4 * Z * H * S * S * D / (2 if causal else 1)
            name = "attention_bwd" + ("_causal" if causal else "")
            print(f"{name},bfloat16,{Z}x{H}x{S}x{D},torch_sdpa,{ms:.5f},,{flops / ms / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
