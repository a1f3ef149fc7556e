#!/usr/bin/env python3
"""Reference values from real Triton for tritium's Philox host reference (interpreter/Philox.h).

Runs tl.randint4x / tl.randint / tl.rand / tl.randn in one small Triton kernel for every
(seed, offset dtype, offset) asked for and prints CSV that tests/unit/PhiloxTest.cpp compares
against (bit-exact for the integers and rand, a few ulp for randn). Needs a CUDA GPU, torch and
Triton (3.6 is the version tritium matches). Typical use, from the repository root:

    python3 tools/triton_random_reference.py -o tests/data/triton_random.csv

Columns: seed (Python int, decimal), offset_dtype (int32|int64), offset (decimal), the four
randint4x words as 8-digit hex (randint is the first, and the script checks tl.randint agrees),
then rand and randn as the hex bits of their float32 values. Lines starting with '#' before the
header record the Triton/torch versions and the GPU.
"""
import argparse
import sys

import torch
import triton
import triton.language as tl

# Seeds of Triton's own test_randint plus ones that exercise the seed widening: -1 is an i32
# argument (sign-extends to key (0xffffffff, 0xffffffff)), 2**63 + 5 a u64 one.
DEFAULT_SEEDS = [0, 1, 42, 54, 124, 0xffffffff, 0x0000000fcafeb0ba, -1, 2**63 + 5]
# Small offsets, block boundaries and the i32 extremes; int64 adds offsets with a high word.
OFFSETS_I32 = list(range(0, 40)) + [1023, 1024, 399999, 2**31 - 1, -1, -2**31]
OFFSETS_I64 = OFFSETS_I32 + [2**32, 2**32 + 7, 0x123456789abcdef0, -(2**40), 2**63 - 1, -2**63]

BLOCK = 128


@triton.jit
def _random_kernel(offs_ptr, ints_ptr, randint_ptr, rand_ptr, randn_ptr, seed, n,
                   BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    offs = tl.load(offs_ptr + i, mask=mask, other=0)
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    # uint32 blocks stored through int32 pointers: same bits.
    tl.store(ints_ptr + 4 * i + 0, r0, mask=mask)
    tl.store(ints_ptr + 4 * i + 1, r1, mask=mask)
    tl.store(ints_ptr + 4 * i + 2, r2, mask=mask)
    tl.store(ints_ptr + 4 * i + 3, r3, mask=mask)
    tl.store(randint_ptr + i, tl.randint(seed, offs), mask=mask)
    tl.store(rand_ptr + i, tl.rand(seed, offs), mask=mask)
    tl.store(randn_ptr + i, tl.randn(seed, offs), mask=mask)


def run(seed, offsets, dtype):
    offs = torch.tensor(offsets, dtype=dtype, device="cuda")
    n = offs.numel()
    ints = torch.empty(4 * n, dtype=torch.int32, device="cuda")
    single = torch.empty(n, dtype=torch.int32, device="cuda")
    uni = torch.empty(n, dtype=torch.float32, device="cuda")
    nor = torch.empty(n, dtype=torch.float32, device="cuda")
    _random_kernel[(triton.cdiv(n, BLOCK), )](offs, ints, single, uni, nor, seed, n, BLOCK=BLOCK)
    ints = [v & 0xffffffff for v in ints.cpu().tolist()]
    single = [v & 0xffffffff for v in single.cpu().tolist()]
    uni = [v & 0xffffffff for v in uni.view(torch.int32).cpu().tolist()]
    nor = [v & 0xffffffff for v in nor.view(torch.int32).cpu().tolist()]
    rows = []
    for k, off in enumerate(offsets):
        words = ints[4 * k:4 * k + 4]
        if single[k] != words[0]:
            raise SystemExit(f"tl.randint != tl.randint4x[0] for seed {seed} offset {off}")
        rows.append((words, uni[k], nor[k]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="CSV file to write (default: stdout)")
    ap.add_argument("--seeds", type=lambda s: [int(x, 0) for x in s.split(",")],
                    default=DEFAULT_SEEDS, help="comma-separated seeds (Python ints)")
    ap.add_argument("--offsets", type=lambda s: [int(x, 0) for x in s.split(",")],
                    help="comma-separated offsets for both dtypes (default: a built-in set; "
                    "values that do not fit int32 are dropped for int32)")
    args = ap.parse_args()

    lines = [
        f"# triton {triton.__version__}, torch {torch.__version__}, "
        f"{torch.cuda.get_device_name()}",
        "seed,offset_dtype,offset,randint,randint4x_1,randint4x_2,randint4x_3,rand,randn",
    ]
    for dtype, name, default in ((torch.int32, "int32", OFFSETS_I32),
                                 (torch.int64, "int64", OFFSETS_I64)):
        offsets = args.offsets if args.offsets is not None else default
        if dtype == torch.int32:
            offsets = [o for o in offsets if -2**31 <= o < 2**31]
        for seed in args.seeds:
            for off, (words, u, z) in zip(offsets, run(seed, offsets, dtype)):
                w = ",".join(f"{x:08x}" for x in words)
                lines.append(f"{seed},{name},{off},{w},{u:08x},{z:08x}")
    text = "\n".join(lines) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
        print(f"wrote {len(lines) - 2} rows to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
