"""tritium's matmul beside cuBLAS and Triton, all timed in one process on the GPU.

Systems, per shape and dtype:
  tritium       the kernel library's matmul (libtritium_kernels_c.so through ctypes, on torch's
                current stream, autotuned as a caller's first call tunes it): C = A x B, with
                the split-K workspace that tritium_matmul_workspace asks for, if any;
  torch         torch.matmul (cuBLAS); for fp8, torch._scaled_mm with per-tensor scales of 1,
                `torch` with use_fast_accum=False and `torch_fast` with it on;
  triton        a Triton kernel written as Triton's tutorial 03 (grouped tile order, autotuned
                over the tutorial's six configurations; bf16 and fp16 only);
  copy          (the decode shape, M <= 64) torch's copy_ of the operands' and C's bytes: the
                ceiling for a product that is a read of its weights.
With --activation=gelu|silu|swiglu (bf16 and fp16), C = act(A x B) through the library's
fused epilogue against torch's matmul and then the activation (cuBLAS and elementwise
kernels): GELU in its tanh form, SiLU, or SwiGLU, silu(A x B_gate) * (A x B_up) for B =
[B_gate | B_up] of [K, 2N] (its TFLOP/s count both products, 4 M N K). The rows' dtype is
marked "+gelu", "+silu" or "+swiglu"; no targets apply.
A is [M, K] row-major; B is [K, N] row-major for bf16 and fp16 (the tutorial's layout) and
[N, K] (nn.Linear's, as _scaled_mm takes it) for fp8. C is bf16 for fp8 operands, else the
operands' dtype.

Each system runs once per shape before it is timed and its C is compared with torch's fp32
product of the same operands: the largest difference must stay within 2% (fp8: 4%) of the
largest |C| (the outputs' rounding is 2^-8 relative; a wrong tile is off by about 100%). A
result that is off says `wrong` in its row; a system that raises says `failed`. Timing:
triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"), CUDA events, L2
cleared before every repetition. TFLOP/s = 2 M N K / time; GB/s = the operands' and C's bytes
/ time.

Targets (the tensor-core issue's, judged in the table): bf16 and fp16 at 4096^3 and 8192^3 at
least 1.0 x cuBLAS and 1.05 x Triton; 1024^3 and 8192 x 8192 x 512 at least cuBLAS; the
decode shape 16 x 8192 x 8192 at 0.9 of the copy; fp8 e4m3 at least 0.95 x _scaled_mm (the
slower of its two forms, as the anchors' ~1250 TFLOP/s figure).

Output: a progress line per measurement on stderr; CSV (kernel,dtype,shape,system,ms,TFLOPs,
GBps,status) on stdout or into -o FILE; then the table (to stdout with -o, else to stderr).

usage: python3 tools/bench_matmul.py [--dtypes=bf16,fp16,fp8e4m3] [--shapes=MxNxK,...]
           [--activation=gelu|silu|swiglu] [--no-triton] [--reps=MS] [--warmup=MS] [--lib=DIR] [-o FILE]
       python3 tools/bench_matmul.py --from-csv=FILE   (the table only; needs no GPU or torch)
Run from the repository root on the GPU machine (docs/BENCHMARKS.md).
"""
import argparse
import csv
import ctypes
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_kernels as bk  # noqa: E402  (the ctypes binding; torch and triton where present)

say, read_csv = bk.say, bk.read_csv  # progress on stderr; a CSV's rows
torch, triton, tl = bk.torch, bk.triton, bk.tl

CSV_COLUMNS = ("kernel", "dtype", "shape", "system", "ms", "TFLOPs", "GBps", "status")
SHAPES = ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 512),
          (4096, 4096, 1024), (16, 8192, 8192))
FP8_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))
DTYPES = ("bf16", "fp16", "fp8e4m3")
CAPI_DTYPE = {"fp32": 0, "fp16": 1, "bf16": 2, "fp8e4m3": 3}  # kernels/capi/tritium_kernels.h
CAPI_ACTIVATION = {"gelu": 1, "silu": 2, "swiglu": 3}
TOLERANCE = {"bf16": 0.02, "fp16": 0.02, "fp8e4m3": 0.04}
PEER_NAMES = {"torch": "cuBLAS", "triton": "Triton", "copy": "copy"}
DECODE_ROWS = 64  # M up to this: the product reads its weights once, judged against the copy


def elem_bytes(dtype):
    return 1 if dtype.startswith("fp8") else 2


def moved_bytes(dtype, M, N, K):
    """The operands' bytes read and C's written (C in bf16 for fp8)."""
    return (M * K + K * N) * elem_bytes(dtype) + M * N * 2


def target(dtype, M, N, K):
    """(peer, factor) pairs the issue asks tritium to reach at this shape, or () for none:
    peer 'torch', 'triton' or 'copy' (a fraction of the copy's GB/s)."""
    if "+" in dtype:  # a fused activation (--activation)
        return ()
    if dtype.startswith("fp8"):
        return (("torch", 0.95),)
    if M <= DECODE_ROWS:
        return (("copy", 0.9),)
    if (M, N, K) in ((4096, 4096, 4096), (8192, 8192, 8192)):
        return (("torch", 1.0), ("triton", 1.05))
    return (("torch", 1.0),)


# --------------------------------------------------------------- Triton's tutorial 03, our way
if bk.MISSING is None:
    def tutorial_configs():
        # The tutorial's configurations for CUDA, as (BM, BN, BK, stages, warps).
        shapes = ((128, 256, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 64, 4, 8),
                  (64, 256, 64, 4, 4), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8))
        return [triton.Config({"BM": m, "BN": n, "BK": k, "GROUP": 8}, num_stages=s, num_warps=w)
                for m, n, k, s, w in shapes]

    @triton.autotune(configs=tutorial_configs(), key=["M", "N", "K"])
    @triton.jit
    def tt_matmul(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        # Programs walk the tiles GROUP rows of tiles at a time, so that neighbours share A's
        # and B's panels in L2.
        pid = tl.program_id(0)
        rows_of_tiles, cols_of_tiles = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GROUP * cols_of_tiles
        first_row = (pid // per_group) * GROUP
        height = min(rows_of_tiles - first_row, GROUP)
        tile_m = first_row + (pid % per_group) % height
        tile_n = (pid % per_group) // height
        rm = (tile_m * BM + tl.arange(0, BM)) % M
        rn = (tile_n * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        a = a_ptr + rm[:, None] * lda + rk[None, :]
        b = b_ptr + rk[:, None] * ldb + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            left = K - k * BK
            acc = tl.dot(tl.load(a, mask=rk[None, :] < left, other=0.0),
                         tl.load(b, mask=rk[:, None] < left, other=0.0), acc)
            a += BK
            b += BK * ldb
        cm = tile_m * BM + tl.arange(0, BM)
        cn = tile_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + cm[:, None] * ldc + cn[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(cm[:, None] < M) & (cn[None, :] < N))

    def triton_matmul(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
        tt_matmul[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))


# ------------------------------------------------------------------------------ tritium
class TritiumMatmul(bk.Tritium):
    SIGNATURES = dict(bk.Tritium.SIGNATURES)
    # in, out, c, a, b, bias, residual, scale_a, scale_b, alpha, out_scale, amax, M, N, K,
    # lda, ldb, ldc, ldr, b_transposed, activation, workspace, workspace_bytes, stream
    SIGNATURES["tritium_matmul_split_k"] = "ii" + "p" * 7 + "ff" + "p" + "l" * 7 + "ii" + "pl" + "p"

    def workspace_for(self, in_dtype, out_dtype, M, N, K, b_transposed, activation=0):
        fn = self.lib.tritium_matmul_workspace
        fn.argtypes = [ctypes.c_int] * 2 + [ctypes.c_int64] * 3 + [ctypes.c_int] * 2
        fn.restype = ctypes.c_int64
        n = int(fn(CAPI_DTYPE[in_dtype], CAPI_DTYPE[out_dtype], M, N, K, b_transposed,
                   activation))
        if n < 0:
            raise bk.TritiumError(f"tritium_matmul_workspace: {self.last_error()}")
        return n

    def matmul(self, dtype, a, b, c, b_transposed, activation=0):
        """A closure computing C = A x B (B [N, K] when b_transposed) through the library, with
        the workspace its plans ask for; activation 3: SwiGLU of B's two halves."""
        M, K = a.shape
        N = c.shape[1]
        out = "bf16" if dtype.startswith("fp8") else dtype
        bytes_ = self.workspace_for(dtype, out, M, N, K, b_transposed, activation)
        workspace = torch.empty(bytes_, dtype=torch.uint8, device="cuda") if bytes_ else None
        call = self.bind("tritium_matmul_split_k", CAPI_DTYPE[dtype], CAPI_DTYPE[out], c, a, b,
                         None, None, None, None, 1.0, 1.0, None, M, N, K, 0, 0, 0, 0,
                         b_transposed, activation, workspace, bytes_)
        call.workspace = workspace  # kept alive with the closure
        return call


# ------------------------------------------------------------------------------ the bench
def check(dtype, got, ref):
    """None where `got` is within the tolerance of the fp32 reference, else why not."""
    diff = (got.float() - ref).abs().max().item()
    scale = ref.abs().max().item()
    if not diff <= TOLERANCE[dtype] * scale:  # also catches NaN
        return f"largest difference {diff:.4g} against largest |C| {scale:.4g}"
    return None


class Bench:
    def __init__(self, opts, out):
        self.opts, self.out = opts, out
        self.writer = csv.writer(out, lineterminator="\n")
        self.rows = []
        self.tritium = TritiumMatmul(opts.lib)
        self.copy_gbps = {}

    def time(self, fn):
        return triton.testing.do_bench(fn, warmup=self.opts.warmup, rep=self.opts.reps,
                                       return_mode="median")

    def row(self, dtype, shape, system, ms=None, status="ok"):
        M, N, K = shape
        text = f"{M}x{N}x{K}"
        products = 2 if self.opts.activation == "swiglu" else 1
        if self.opts.activation:
            dtype = dtype + "+" + self.opts.activation
        if ms is None:
            r = dict(zip(CSV_COLUMNS, ("matmul", dtype, text, system, status, "", "", status)))
            say(f"matmul {dtype:8} {text:>16} {system:11} {status}")
        else:
            tflops = 2 * M * N * K * products / ms / 1e9
            gbps = moved_bytes(dtype, M, N * products, K) / ms / 1e6
            r = dict(zip(CSV_COLUMNS, ("matmul", dtype, text, system, f"{ms:.5f}",
                                       f"{tflops:.1f}", f"{gbps:.1f}", status)))
            say(f"matmul {dtype:8} {text:>16} {system:11} {ms:9.5f} ms {tflops:8.1f} TFLOP/s "
                f"{gbps:8.1f} GB/s")
        self.rows.append(r)
        self.writer.writerow([r[c] for c in CSV_COLUMNS])
        self.out.flush()

    def measure(self, dtype, shape, system, fn, c, ref):
        """Checks, times and checks again `fn`, which writes C into `c` or returns it."""
        try:
            c.fill_(float("nan"))  # poisoned: a result that is not written is wrong
            got = fn()
            torch.cuda.synchronize()
            why = check(dtype, c if got is None else got, ref)
            if why:
                say(f"WRONG {system} {dtype} {shape}: {why}")
                return self.row(dtype, shape, system, status="wrong")
            ms = self.time(fn)
            got = fn()
            why = check(dtype, c if got is None else got, ref)  # after the repetitions
            if why:
                say(f"WRONG {system} {dtype} {shape} after timing: {why}")
                return self.row(dtype, shape, system, status="wrong")
            self.row(dtype, shape, system, ms)
        except Exception as e:  # noqa: BLE001 - one system's failure leaves the others
            say(f"FAILED {system} {dtype} {shape}: {type(e).__name__}: {e}")
            self.row(dtype, shape, system, status="failed")

    def copy(self, dtype, shape):
        """The copy of the same bytes, half read and half written."""
        M, N, K = shape
        n = moved_bytes(dtype, M, N * (2 if self.opts.activation == "swiglu" else 1), K) // 2
        src = torch.empty(n, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        self.row(dtype, shape, "copy", self.time(lambda: dst.copy_(src)))

    def shape(self, dtype, shape):
        M, N, K = shape
        torch.manual_seed(M * 31 + N * 7 + K)
        fp8 = dtype.startswith("fp8")
        if fp8:
            a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
            b_nk = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
            ref = a.float() @ b_nk.float().t()
            c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            one = torch.ones((), device="cuda")
            systems = [("tritium", self.tritium.matmul(dtype, a, b_nk, c, 1))]
            for name, fast in (("torch", False), ("torch_fast", True)):
                systems.append((name, lambda fast=fast: torch._scaled_mm(
                    a, b_nk.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                    use_fast_accum=fast)))
        elif self.opts.activation:
            F = torch.nn.functional
            t = bk.torch_dtype(dtype)
            swiglu = self.opts.activation == "swiglu"
            a = torch.randn(M, K, device="cuda", dtype=t)
            b = torch.randn(K, 2 * N if swiglu else N, device="cuda", dtype=t)
            act = {"gelu": lambda h: F.gelu(h, approximate="tanh"), "silu": F.silu,
                   "swiglu": lambda h: F.silu(h[:, :N]) * h[:, N:]}[self.opts.activation]
            ref = act(a.float() @ b.float())
            c = torch.empty(M, N, device="cuda", dtype=t)
            def unfused():  # (its result returned: no copy into c)
                return act(torch.matmul(a, b))
            code = CAPI_ACTIVATION[self.opts.activation]
            systems = [("tritium", self.tritium.matmul(dtype, a, b, c, 0, activation=code)),
                       ("torch", unfused)]
        else:
            t = bk.torch_dtype(dtype)
            a = torch.randn(M, K, device="cuda", dtype=t)
            b = torch.randn(K, N, device="cuda", dtype=t)
            ref = a.float() @ b.float()
            c = torch.empty(M, N, device="cuda", dtype=t)
            def cublas():
                torch.matmul(a, b, out=c)
            systems = [("tritium", self.tritium.matmul(dtype, a, b, c, 0)), ("torch", cublas)]
            if not self.opts.no_triton:
                systems.append(("triton", lambda: triton_matmul(a, b, c)))
        for name, fn in systems:
            self.measure(dtype, shape, name, fn, c, ref)
        if M <= DECODE_ROWS:
            self.copy(dtype, shape)
        del a, c, ref
        torch.cuda.empty_cache()

    def run(self, dtypes, shapes):
        props = torch.cuda.get_device_properties(0)
        print(f"# {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}, "
              f"triton {triton.__version__}; {self.tritium.path}", file=self.out)
        print(f"# do_bench(warmup={self.opts.warmup}, rep={self.opts.reps}, median), L2 cleared "
              "per repetition", file=self.out)
        self.writer.writerow(CSV_COLUMNS)
        for dtype in dtypes:
            for shape in shapes or (FP8_SHAPES if dtype.startswith("fp8") else SHAPES):
                self.shape(dtype, shape)


# ------------------------------------------------------------------------------ the table
def table(rows):
    """The table's lines: per dtype and shape, tritium against each peer and the target."""
    figures = {}
    for r in rows:
        key = (r["dtype"], r["shape"])
        value = r["TFLOPs"] if r["system"] != "copy" else r["GBps"]
        if r["system"] == "tritium" or r["system"] == "copy":
            figures.setdefault(key, {})[r["system"] + "_gbps"] = r["GBps"]
        figures.setdefault(key, {})[r["system"]] = value if r["status"] == "ok" else r["status"]
    lines = ["| dtype | M x N x K | tritium TFLOP/s | cuBLAS | Triton | / cuBLAS | / Triton | "
             "of copy | target |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    met = total = 0
    for (dtype, shape), f in figures.items():
        M, N, K = (int(v) for v in shape.split("x"))

        def number(name):
            try:
                return float(f.get(name, ""))
            except ValueError:
                return None
        ours = number("tritium")
        # fp8's cuBLAS figure: the slower _scaled_mm form, which the anchors quote.
        peer = number("torch")
        ratios = {"torch": ours / peer if ours and peer else None}
        tri = number("triton")
        ratios["triton"] = ours / tri if ours and tri else None
        copy = number("copy_gbps")
        ours_gbps = number("tritium_gbps")
        ratios["copy"] = ours_gbps / copy if ours_gbps and copy else None
        goals = target(dtype, M, N, K)
        verdict = "-"
        if goals:
            total += 1
            reached = [ratios[p] is not None and ratios[p] >= x for p, x in goals]
            verdict = ("met" if all(reached) else "not met") + " (" + ", ".join(
                f"{x:g} x {PEER_NAMES[p]}" for p, x in goals) + ")"
            met += all(reached)

        def text(v, fmt="{:.1f}"):
            return "-" if v is None else fmt.format(v)
        lines.append(f"| {dtype} | {M} x {N} x {K} | {f.get('tritium', '-')} | "
                     f"{f.get('torch', '-')} | {f.get('triton', '-')} | "
                     f"{text(ratios['torch'], '{:.2f}')} | {text(ratios['triton'], '{:.2f}')} | "
                     f"{text(ratios['copy'], '{:.2f}')} | {verdict} |")
    lines.append(f"targets met at {met} of {total} shapes")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--shapes", default="", help="MxNxK,... (default: the issue's shapes)")
    p.add_argument("--no-triton", action="store_true")
    p.add_argument("--activation", choices=sorted(CAPI_ACTIVATION), default="",
                   help="C = act(A B) through tritium's fused epilogue, against torch's matmul "
                        "and then the activation")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--lib", default="device-bundle")
    p.add_argument("-o", dest="output")
    p.add_argument("--from-csv")
    opts = p.parse_args(argv)
    if opts.from_csv:
        print("\n".join(table(read_csv(opts.from_csv))))
        return 0
    if bk.MISSING is not None:
        raise SystemExit(f"bench_matmul: torch and triton are needed to measure ({bk.MISSING})")
    dtypes = [d for d in opts.dtypes.split(",") if d]
    for d in dtypes:
        if opts.activation and d.startswith("fp8"):
            raise SystemExit("bench_matmul: --activation takes bf16 and fp16")
        if d not in DTYPES:
            raise SystemExit(f"bench_matmul: --dtypes: '{d}' is none of {', '.join(DTYPES)}")
    shapes = []
    for s in filter(None, opts.shapes.split(",")):
        try:
            M, N, K = (int(v) for v in s.split("x"))
        except ValueError:
            raise SystemExit(f"bench_matmul: --shapes: '{s}' is not MxNxK")
        shapes.append((M, N, K))
    out = open(opts.output, "w") if opts.output else sys.stdout
    bench = Bench(opts, out)
    bench.run(dtypes, shapes)
    lines = table(bench.rows)
    print("\n".join(lines), file=sys.stdout if opts.output else sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
