#!/usr/bin/env python3
"""Writes Triton's own random numbers as CSV, for tritium's bit-for-bit comparison
(tests/gpu/BlocksGpuTest.cpp, TritonRandomReference, reads the file named by
TRITIUM_TRITON_RANDOM_CSV). Needs a GPU, torch and triton (the GPU machine has both).

    python3 tools/triton_random_reference.py > /tmp/triton_random.csv

Columns: seed, offset, randint (u32 hex), rand (f32 bits hex), randn (f32 bits hex); offsets
0 .. 4095 as i32, seeds 0, 12345 and -7.
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def random_numbers(ints, uniforms, normals, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ints + offs, tl.randint(seed, offs).to(tl.int32, bitcast=True))
    tl.store(uniforms + offs, tl.rand(seed, offs))
    tl.store(normals + offs, tl.randn(seed, offs))


def main():
    n, block = 4096, 1024
    out = sys.stdout
    out.write(f"# triton {triton.__version__}\n")
    for seed in (0, 12345, -7):
        ints = torch.empty(n, dtype=torch.int32, device="cuda")
        uni = torch.empty(n, dtype=torch.float32, device="cuda")
        nor = torch.empty(n, dtype=torch.float32, device="cuda")
        random_numbers[(n // block,)](ints, uni, nor, seed, BLOCK=block)
        torch.cuda.synchronize()
        i = ints.cpu().tolist()
        u = uni.cpu().view(torch.int32).tolist()
        z = nor.cpu().view(torch.int32).tolist()
        for off in range(n):
            out.write(f"{seed},{off},{i[off] & 0xffffffff:08x},{u[off] & 0xffffffff:08x},"
                      f"{z[off] & 0xffffffff:08x}\n")


if __name__ == "__main__":
    main()
