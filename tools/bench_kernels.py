"""tritium's kernel library beside its peers, all timed in one process on the GPU.

Kernels (positional names; none given: all of them):
  add           vector add, fp32, n = 2^20, 2^24, 2^28                  bytes 3 * n * 4
  dropout       seeded dropout, fp32, p = 0.5, n = 2^20, 2^24, 2^28     bytes 2 * n * 4
  layernorm     LayerNorm forward and backward, fp16 and bf16, M = 4096, N = 512 ... 65536
  rmsnorm       RMSNorm forward and backward, bf16, the same shapes
                (norms: forward 2 * M * N * elem bytes, backward 3 * M * N * elem)
  crossentropy  cross-entropy forward and backward, bf16, M = 4096, V = 32000, 50257, 128256,
                256000 (forward M * V * elem bytes, backward 2 * M * V * elem)
  softmax       softmax forward, fp32 and bf16, M = 4096, N = 1024 ... 32768 (2 * M * N * elem)
  (--dtypes=fp32,fp16,bf16 runs the row kernels in any of the three dtypes)

Systems: tritium (libtritium_kernels_c.so through ctypes, on torch's current stream), torch
eager (torch.nn.functional; backward through torch.autograd.grad), torch.compile of the same
function (dynamic=False), a Triton kernel in the style of Triton's tutorials (01 add, 04
dropout, 05 LayerNorm, 02 softmax, and RMSNorm and cross-entropy written the same way), and
`copy`: torch's copy_ of a buffer that moves the same number of bytes (half read, half written),
the ceiling. Every system is timed with triton.testing.do_bench(fn, warmup=25, rep=200,
return_mode="median"): CUDA events, L2 cleared before every repetition. GB/s = bytes / time.

Each system runs once per shape before it is timed and its outputs are compared with an fp32
reference computed by torch from the same inputs (tolerance by the output's dtype: fp32 1e-4,
fp16 2e-3, bf16 2e-2 relative, plus a tenth of that times the largest reference value);
tritium is checked once more after timing, since its buffers and workspace are reused across
calls. Dropout's mask must equal, bit for bit, the Triton kernel's tl.rand(seed, offsets) > p
for the same seed. A result that is off prints why on stderr and its row says `wrong` where the
time would be; a system that raises says `failed`.

Peer guard: a peer (triton, torch, torch_compile) measured under half its reference figure in
tools/peer_anchors.csv (H200 figures; scaled by the copy bandwidth on an H100), or under a tenth
of the copy of the same bytes, is refused: `REFUSED ...: why` on stderr, status `refused` and
the reason in its CSV row, and it is no best peer in the table (FAR_BELOW_ANCHOR and
MIN_COPY_FRACTION below say why those floors).

Output: a progress line per measurement on stderr; CSV (kernel,dtype,shape,system,ms,GBps,
status,reason; lines starting with '#' are comments, among them the device and its copy
bandwidth) on stdout or into -o FILE; then a table per kernel and shape: tritium, the best peer,
the copy, their ratios, and whether tritium meets the target min(1.1 x best peer, 0.92 x copy)
(to stdout with -o, else to stderr); a PNG with --plot=FILE.

usage: python3 tools/bench_kernels.py [KERNEL...] [--quick] [--no-compile] [--reps=MS]
           [--warmup=MS] [--sizes=LIST] [--dtypes=LIST] [--time-limit=S] [--lib=DIR]
           [-o FILE] [--plot=FILE]
       python3 tools/bench_kernels.py [KERNEL...] --peer-check [--sizes=LIST] [--dtypes=LIST]
           [-o FILE]   (the Triton peers, torch and the copy at a couple of shapes, against
           their anchors; no tritium library needed; exit status 1 if a Triton peer fails)
       python3 tools/bench_kernels.py --from-csv=FILE [--plot=FILE]   (table and plot only;
           needs neither a GPU nor torch; older CSVs without status columns are judged then)
Run from the repository root on the GPU machine (tools/device-kernels.sh does; see
docs/BENCHMARKS.md).
"""
import argparse
import contextlib
import csv
import ctypes
import gc
import math
import os
import re
import sys
import time
import types

# torch and Triton are needed to measure, not to read a CSV back (--from-csv) or for --help.
try:
    import torch
    import torch.nn.functional as F
    import triton
    import triton.language as tl
    import triton.testing
    MISSING = None
except ImportError as error:  # pragma: no cover - exercised on machines without a GPU stack
    MISSING = error
    torch = F = None
    # Stand-ins so that the kernel definitions below still parse; they are never launched.
    tl = types.SimpleNamespace(constexpr=None)
    triton = types.SimpleNamespace(jit=lambda fn: fn)

KERNELS = ("add", "dropout", "layernorm", "rmsnorm", "crossentropy", "softmax")
# status: ok, wrong, failed (ms and GBps then say so too) or refused (the peer guard's verdict,
# with its reason; ms and GBps keep the measured figures). CSVs written before these two columns
# are read as well.
CSV_COLUMNS = ("kernel", "dtype", "shape", "system", "ms", "GBps", "status", "reason")
PEERS = ("triton", "torch", "torch_compile")
M_ROWS = 4096  # rows of every row-wise kernel, as the peers' reference runs
DEVICE = "cuda"

# Sizes per kernel: the full sweep and --quick's.
SIZES = {
    "add": ([2**20, 2**24, 2**28], [2**20, 2**24]),
    "dropout": ([2**20, 2**24, 2**28], [2**24]),
    "layernorm": ([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536], [1024, 8192, 65536]),
    "rmsnorm": ([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536], [1024, 8192, 65536]),
    "crossentropy": ([32000, 50257, 128256, 256000], [32000, 128256]),
    "softmax": ([1024, 2048, 4096, 8192, 16384, 32768], [1024, 8192]),
}
# The peers' script's dtypes are the default; --dtypes may ask for any dtype a kernel's case takes
# (the row kernels take all three; add and dropout stay fp32, as the peers' figures are).
DTYPES = {
    "add": ("fp32",), "dropout": ("fp32",), "layernorm": ("fp16", "bf16"), "rmsnorm": ("bf16",),
    "crossentropy": ("bf16",), "softmax": ("fp32", "bf16"),
}
ROW_DTYPES = ("fp32", "fp16", "bf16")
ALL_DTYPES = {"add": ("fp32",), "dropout": ("fp32",), "layernorm": ROW_DTYPES,
              "rmsnorm": ROW_DTYPES, "crossentropy": ROW_DTYPES, "softmax": ROW_DTYPES}
DTYPE_CODE = {"fp32": 0, "fp16": 1, "bf16": 2}  # the C interface's `dtype`


def torch_dtype(name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


# ------------------------------------------------------------------------------------ tritium
class TritiumError(RuntimeError):
    pass


class Tritium:
    """libtritium_kernels_c.so through ctypes. Argument types follow
    kernels/capi/tritium_kernels.h, one letter per argument: i int, l int64_t, p pointer,
    f float, d double; every kernel's last argument is its stream."""

    SIGNATURES = {
        "tritium_vector_add": "ippplp",
        "tritium_dropout": "ippldlp",
        "tritium_softmax_forward": "ippllllp",
        "tritium_layer_norm_forward": "i" + "p" * 6 + "llll" + "fp",
        "tritium_layer_norm_backward": "i" + "p" * 8 + "l" * 5 + "plp",
        "tritium_rms_norm_forward": "i" + "p" * 4 + "llll" + "fp",
        "tritium_rms_norm_backward": "i" + "p" * 6 + "l" * 5 + "plp",
        "tritium_cross_entropy_forward": "i" + "p" * 5 + "llll" + "fp",
        "tritium_cross_entropy_backward": "i" + "p" * 5 + "l" * 5 + "ffp",
    }
    WORKSPACE = ("tritium_layer_norm_backward_workspace", "tritium_rms_norm_backward_workspace")
    CTYPES = {"i": ctypes.c_int, "l": ctypes.c_int64, "p": ctypes.c_void_p,
              "f": ctypes.c_float, "d": ctypes.c_double}

    def __init__(self, folder):
        self.path = os.path.join(os.path.abspath(folder), "libtritium_kernels_c.so")
        if not os.path.isfile(self.path):
            raise SystemExit(f"bench_kernels: no {self.path} (build the bundle with "
                             "tools/build-device-bundle.sh, or name its folder with --lib=DIR)")
        # libtritium.so is found beside it through the library's $ORIGIN rpath.
        self.lib = ctypes.CDLL(self.path)
        self.lib.tritium_last_error.argtypes = []
        self.lib.tritium_last_error.restype = ctypes.c_char_p
        self.functions = {}

    def function(self, name):
        """The C function, typed on first use; an older library without it raises here, which
        marks only that kernel's rows failed."""
        if name not in self.functions:
            fn = getattr(self.lib, name)
            if name in self.WORKSPACE:
                fn.argtypes, fn.restype = [ctypes.c_int64, ctypes.c_int64], ctypes.c_int64
            else:
                fn.argtypes = [self.CTYPES[c] for c in self.SIGNATURES[name]]
                fn.restype = ctypes.c_int
            self.functions[name] = fn
        return self.functions[name]

    def last_error(self):
        message = self.lib.tritium_last_error()
        return message.decode(errors="replace") if message else "(no message)"

    def workspace_bytes(self, name, rows, cols):
        try:
            return int(self.function(name)(rows, cols))
        except AttributeError:  # an older library; its backward call then fails on its own
            return 0

    def bind(self, name, *args, stream=None):
        """A closure calling `name` with `args` (tensors passed by address) on `stream` (torch's
        current stream when None); it raises with tritium_last_error() on a nonzero return."""
        try:
            fn = self.function(name)
        except AttributeError:  # an older library: only tritium's row of this kernel fails
            def missing():
                raise TritiumError(f"{self.path} has no {name}")
            return missing
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        values = tuple(a.data_ptr() if hasattr(a, "data_ptr") else a for a in args) + (stream,)
        if len(values) != len(fn.argtypes):
            raise TypeError(f"{name} takes {len(fn.argtypes)} arguments, given {len(values)}")

        def call():
            if fn(*values) != 0:
                raise TritiumError(f"{name}: {self.last_error()}")
        return call


# ------------------------------------------------------------------ Triton peers (tutorial style)
@triton.jit
def tt_add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    a = tl.load(a_ptr + offsets, mask=inside)
    b = tl.load(b_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, a + b, mask=inside)


@triton.jit
def tt_dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    keep = tl.rand(seed, offsets) > p  # the mask is regenerated from (seed, offset), not stored
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=inside)


@triton.jit
def tt_layernorm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        centered = tl.where(cols < N, x - mean, 0.0)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < N
        w = tl.load(w_ptr + cols, mask=inside).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside).to(tl.float32)
        x = tl.load(x_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


@triton.jit
def tt_layernorm_bwd_dx(dx_ptr, dy_ptr, pdw_ptr, pdb_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr,
                        lock_ptr, stride, N, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    # dx for one row, and the row's dw/db added into one of GROUP partial rows under a spin
    # lock (tutorial 05's scheme); the partial rows are then summed by tt_layernorm_bwd_dwdb.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(inside, (x - mean) * rstd, 0.0)
    wdy = tl.where(inside, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=inside)
    group = row % GROUP
    lock = lock_ptr + group
    count = lock_ptr + GROUP + group  # 0 until the group's first row has stored its share
    pdw_row = pdw_ptr + group * N + cols
    pdb_row = pdb_ptr + group * N + cols
    pdw = dy * xhat
    pdb = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(count) == 0:
        tl.atomic_xchg(count, 1)
    else:
        pdw += tl.load(pdw_row, mask=inside).to(tl.float32)
        pdb += tl.load(pdb_row, mask=inside).to(tl.float32)
    tl.store(pdw_row, pdw.to(pdw_ptr.dtype.element_ty), mask=inside)
    tl.store(pdb_row, pdb.to(pdb_ptr.dtype.element_ty), mask=inside)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def tt_layernorm_bwd_dwdb(pdw_ptr, pdb_ptr, dw_ptr, db_ptr, G, N, BM: tl.constexpr,
                          BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    dw = tl.zeros((BM, BN), dtype=tl.float32)
    db = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, G, BM):
        rows = start + tl.arange(0, BM)
        inside = (rows[:, None] < G) & (cols[None, :] < N)
        offsets = rows[:, None] * N + cols[None, :]
        dw += tl.load(pdw_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
        db += tl.load(pdb_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def tt_rmsnorm_fwd(x_ptr, y_ptr, w_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=inside)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def tt_rmsnorm_bwd(dy_ptr, dx_ptr, x_ptr, w_ptr, rstd_ptr, pdw_ptr, stride, M, N,
                   BLOCK: tl.constexpr):
    # A persistent program per SM walks rows, keeping its share of dw in registers (fp32);
    # the host sums the programs' partial rows.
    program = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(program, M, tl.num_programs(0)):
        base = row.to(tl.int64) * stride
        x = tl.load(x_ptr + base + cols, mask=inside, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + cols, mask=inside, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd
        wdy = w * dy
        c = tl.sum(xhat * wdy, axis=0) / N
        tl.store(dx_ptr + base + cols, ((wdy - xhat * c) * rstd).to(dx_ptr.dtype.element_ty),
                 mask=inside)
        dw += dy * xhat
    tl.store(pdw_ptr + program * N + cols, dw, mask=inside)


@triton.jit
def tt_crossentropy_fwd(x_ptr, target_ptr, loss_ptr, lse_ptr, stride, V, BLOCK: tl.constexpr):
    # One row per program, read once in blocks with a running max and rescaled sum per lane.
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * stride
    run_max = tl.full([BLOCK], -1e30, tl.float32)  # finite: -inf - -inf would give NaN
    run_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(run_max, x)
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.exp(x - new_max)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    lse = row_max + tl.log(tl.sum(run_sum * tl.exp(run_max - row_max), axis=0))
    target = tl.load(target_ptr + row)
    tl.store(loss_ptr + row, lse - tl.load(x_ptr + target).to(tl.float32))
    tl.store(lse_ptr + row, lse)


@triton.jit
def tt_crossentropy_bwd(x_ptr, dx_ptr, target_ptr, lse_ptr, stride, V, scale,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lse = tl.load(lse_ptr + row)
    target = tl.load(target_ptr + row)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < V, other=0.0).to(tl.float32)
        grad = tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)
        tl.store(dx_ptr + row * stride + cols, (grad * scale).to(dx_ptr.dtype.element_ty),
                 mask=cols < V)


@triton.jit
def tt_softmax(y_ptr, x_ptr, x_stride, y_stride, M, N, BLOCK: tl.constexpr,
               num_stages: tl.constexpr):
    # Tutorial 02: a persistent grid, each program taking every num_programs-th row whole. The
    # parameter is called num_stages as in the tutorial: warmup(num_stages=...) then sets both the
    # loop's pipelining depth and the compile option of that name.
    for row in tl.range(tl.program_id(0), M, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK)
        inside = cols < N
        x = tl.load(x_ptr + row * x_stride + cols, mask=inside, other=-float("inf"))
        x = x.to(tl.float32)  # tl.exp takes fp32; a no-op for fp32 rows
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def row_warps(block):
    """Warps for a row of `block` elements held in registers (tutorial 05's rule, with 16 for
    the longest rows so that each thread holds fewer values)."""
    return min(max(block // 256, 1), 16 if block >= 16384 else 8)


def triton_layernorm(x, w, b, eps):
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, device=x.device, dtype=torch.float32)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    block = min(65536 // x.element_size(), triton.next_power_of_2(N))  # the tutorial's 64 KB cap
    tt_layernorm_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK=block,
                           num_warps=min(max(block // 256, 1), 8))
    return y, mean, rstd


def triton_layernorm_fits(N, elem):
    """The tutorial's backward holds a whole row in one block of at most 64 KB."""
    return N * elem <= 65536


def triton_layernorm_bwd(dy, x, w, mean, rstd):
    M, N = x.shape
    block = triton.next_power_of_2(N)
    # The tutorial's number of partial rows: more for short rows, where locks contend more.
    group = 256 if N <= 1024 else 128 if N <= 4096 else 96 if N <= 8192 else 64
    locks = torch.zeros(2 * group, dtype=torch.int32, device=x.device)
    pdw = torch.zeros((group, N), dtype=x.dtype, device=x.device)
    pdb = torch.zeros((group, N), dtype=x.dtype, device=x.device)
    dx = torch.empty_like(dy)
    dw = torch.empty_like(w)
    db = torch.empty_like(w)
    tt_layernorm_bwd_dx[(M,)](dx, dy, pdw, pdb, x, w, mean, rstd, locks, x.stride(0), N,
                              GROUP=group, BLOCK=block, num_warps=min(max(block // 256, 1), 8))
    tt_layernorm_bwd_dwdb[(triton.cdiv(N, 128),)](pdw, pdb, dw, db, min(group, M), N,
                                                  BM=32, BN=128)
    return dx, dw, db


def triton_rmsnorm(x, w, eps):
    M, N = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(N)
    tt_rmsnorm_fwd[(M,)](x, y, w, rstd, x.stride(0), N, eps, BLOCK=block,
                         num_warps=row_warps(block))
    return y, rstd


def triton_rmsnorm_bwd(dy, x, w, rstd):
    M, N = x.shape
    programs = device_properties(x.device.index or 0)["multiprocessor_count"]
    dx = torch.empty_like(x)
    pdw = torch.empty((programs, N), device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(N)
    tt_rmsnorm_bwd[(programs,)](dy, dx, x, w, rstd, pdw, x.stride(0), M, N, BLOCK=block,
                                num_warps=row_warps(block))
    return dx, pdw.sum(0).to(w.dtype)


def triton_crossentropy(x, target):
    M, V = x.shape
    loss = torch.empty(M, device=x.device, dtype=torch.float32)
    lse = torch.empty(M, device=x.device, dtype=torch.float32)
    tt_crossentropy_fwd[(M,)](x, target, loss, lse, x.stride(0), V, BLOCK=4096, num_warps=8)
    return loss, lse, loss.mean()


def triton_crossentropy_bwd(x, target, lse):
    M, V = x.shape
    dx = torch.empty_like(x)
    tt_crossentropy_bwd[(M,)](x, dx, target, lse, x.stride(0), V, 1.0 / M, BLOCK=4096,
                              num_warps=8)
    return dx


_properties = {}


def device_properties(index):
    """Triton's device properties (SMs, registers, shared memory), asked once per device.
    triton.runtime.driver.active.utils.get_device_properties keeps nothing: each call asks the
    driver again, clock rates among the attributes. The softmax peer's old launcher asked on
    every timed call and measured about 1 ms per call at both sizes it ran (see triton_softmax);
    --peer-check prints what one such query costs on the machine it runs on."""
    if index not in _properties:
        _properties[index] = triton.runtime.driver.active.utils.get_device_properties(index)
    return _properties[index]


def triton_specialization(args):
    """What Triton specializes a compiled kernel on, per argument: integers equal to 1, divisible
    by 16 or wider than 32 bits, pointers aligned to 16 bytes. A kernel compiled for one
    specialization must not be launched directly (as below) with arguments of another."""
    return tuple((a == 1, a % 16 == 0, -2**31 <= a < 2**31) if isinstance(a, int)
                 else a.data_ptr() % 16 == 0 for a in args)


_softmax_kernels = {}  # (device, dtype, BLOCK, stages, specialization) -> (kernel, programs)


def triton_softmax(x):
    """Tutorial 02's launcher: compile once (warmup), size a persistent grid from the compiled
    kernel's registers and shared memory (as many programs as fit on the GPU at once, each looping
    over rows), and launch the compiled kernel itself. The device properties and the compiled
    kernel (with its grid) are cached per specialization, so that a call's host work is the
    allocation of y and one launch.

    The launcher this replaces asked Triton for the device properties on every call and went
    through the JIT dispatcher. It measured 1.0-1.3 ms per call whatever the size and dtype
    (4096 x 1024 and 4096 x 8192, fp32 and bf16: 13-266 GB/s on the H200 and H100 in
    docs/perf/kernels-*.csv), a fixed host cost during which the GPU waited; the same kernel
    launched this way by tools/peers_softmax.py ran fp32 at 2530-3720 GB/s for N = 1024-8192 on
    the same day (docs/perf/softmax-peers-*-2026-11-24.csv)."""
    M, N = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(N)
    device = x.device.index or 0
    props = device_properties(device)
    warps, stages = 8, (4 if props["max_shared_mem"] > 200000 else 2)
    args = (y, x, x.stride(0), y.stride(0), M, N)
    key = (device, x.dtype, block, stages) + triton_specialization(args)
    if key not in _softmax_kernels:
        kernel = tt_softmax.warmup(*args, BLOCK=block, num_stages=stages, num_warps=warps,
                                   grid=(1,))
        kernel._init_handles()  # n_regs is known once the binary is loaded
        per_sm = props["max_num_regs"] // (max(kernel.n_regs, 1) * props["warpSize"] * warps)
        if kernel.metadata.shared:
            per_sm = min(per_sm, props["max_shared_mem"] // kernel.metadata.shared)
        _softmax_kernels[key] = (kernel, props["multiprocessor_count"] * max(per_sm, 1))
    kernel, programs = _softmax_kernels[key]
    kernel[(min(programs, M), 1, 1)](*args, block, stages)
    return y


# ------------------------------------------------------------------------------- checking
# rtol by the output's dtype; atol is a tenth of it times the largest reference magnitude, so
# that elements near zero are judged against the tensor's scale.
TOLERANCE = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 2e-2}
CHUNK = 1 << 24  # elements compared at a time: a 2^30-element tensor in float64 would not fit


def mismatch(name, got, ref):
    """None when `got` matches `ref` within got's dtype's tolerance, else a sentence."""
    rtol = TOLERANCE[str(got.dtype).split(".")[-1]]
    g, r = got.reshape(-1), ref.reshape(-1)
    if g.numel() != r.numel():
        return f"{name}: {g.numel()} elements, expected {r.numel()}"
    chunks = range(0, g.numel(), CHUNK)
    scale = max((float(r[i:i + CHUNK].abs().max()) for i in chunks), default=0.0)
    atol = rtol / 10 * scale
    bad, first, worst = 0, None, 0.0
    for start in chunks:
        g_part, r_part = g[start:start + CHUNK].double(), r[start:start + CHUNK].double()
        err = (g_part - r_part).abs()
        off = ~(err <= rtol * r_part.abs() + atol)  # NaN is off too
        count = int(off.sum())
        if count:
            bad += count
            worst = max(worst, float(err[off].nan_to_num(nan=math.inf, posinf=math.inf).max()))
            if first is None:
                i = int(off.to(torch.uint8).argmax())
                first = (start + i, float(g_part[i]), float(r_part[i]))
    if not bad:
        return None
    i, gv, rv = first
    return (f"{name}: {bad} of {g.numel()} elements off (first at {i}: got {gv:.6g}, expected "
            f"{rv:.6g}; max |error| {worst:.3g}; tolerance {rtol:g} relative + {atol:.3g})")


def against(ref):
    """A check comparing every output a system returns with the reference of the same name."""
    def check(system, outputs):
        return [m for m in (mismatch(k, v, ref[k]) for k, v in outputs.items()) if m]
    return check


def giving(call, **outputs):
    """A system that calls `call` (writing into preallocated tensors) and returns them."""
    def run():
        call()
        return outputs
    return run


def autograd_bwd(forward, inputs, names, grad, extra=()):
    """torch's backward of forward(*inputs, *extra): the forward (and torch.compile's compile)
    runs on the first call, which is the untimed check; every call then runs the saved graph.
    torch.autograd.grad rather than .backward(): .backward() would add each gradient into
    .grad, an extra read-modify-write of dx in every timed call after the first."""
    state = {}

    def run():
        if "out" not in state:
            state["out"] = forward(*inputs, *extra)
        grads = torch.autograd.grad(state["out"], inputs, grad, retain_graph=True)
        return dict(zip(names, grads))
    return run


# ------------------------------------------------------------------------------ measuring
def say(*parts):
    print(*parts, file=sys.stderr, flush=True)


class NoTritium:
    """Stands in for the library where tritium is not measured (--peer-check): its calls are
    bound but never made."""
    path = "(tritium not measured)"

    def bind(self, name, *args, stream=None):
        return lambda: None

    def workspace_bytes(self, name, rows, cols):
        return 0


class Bench:
    def __init__(self, opts, out, systems=None, sizes=None):
        """systems: the names to measure (None: all); sizes: {kernel: sizes} replacing the
        sweep where --sizes is not given."""
        self.opts, self.out = opts, out
        self.systems, self.sizes = systems, sizes or {}
        self.rows = []
        self.started = time.time()
        self.left_out = []  # shapes not started within --time-limit
        self.tritium = Tritium(opts.lib) if self.runs("tritium") else NoTritium()
        self.writer = csv.writer(out, lineterminator="\n")
        self.guard = None  # set by header(), once the copy bandwidth is measured
        if not opts.no_compile:
            # dynamic=False compiles once per shape; past dynamo's default limit of 8 graphs
            # per function later shapes would run eager under the torch_compile label.
            # new_shape() also resets dynamo.
            config = torch._dynamo.config
            for knob in ("recompile_limit", "cache_size_limit"):
                if hasattr(config, knob):
                    setattr(config, knob, 64)

    def runs(self, system):
        return self.systems is None or system in self.systems

    def header(self):
        props = torch.cuda.get_device_properties(0)
        print(f"# {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}, "
              f"triton {triton.__version__}; {self.tritium.path}", file=self.out)
        print(f"# do_bench(warmup={self.opts.warmup}, rep={self.opts.reps}, median), L2 cleared "
              "per repetition; GBps = bytes / time", file=self.out)
        copy = self.copy_bandwidth()
        self.guard = PeerGuard(props.name, copy)
        say(f"bench_kernels: {props.name}; copy bandwidth "
            f"{'-' if copy is None else format(copy, '.0f')} GB/s; {self.guard.basis()}")
        if copy is not None:
            print(f"# {COPY_COMMENT} {copy:.1f} GB/s ({COPY_BYTES >> 20} MiB read, "
                  f"{COPY_BYTES >> 20} MiB written)", file=self.out)
        print(f"# peer guard: {self.guard.basis()}", file=self.out)
        self.writer.writerow(CSV_COLUMNS)
        self.out.flush()

    def copy_bandwidth(self):
        """The device's copy bandwidth in this run, timed as every system is: the figure the
        anchors are scaled by on another GPU of their family (PeerGuard)."""
        try:
            src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=DEVICE)
            dst = torch.empty_like(src)
            ms = self.time(lambda: dst.copy_(src))
            del src, dst
            torch.cuda.empty_cache()
            return 2 * COPY_BYTES / ms / 1e6
        except Exception as e:  # out of memory, say: then only the copy floor guards the peers
            say(f"bench_kernels: no copy bandwidth ({type(e).__name__}: {e})")
            return None

    def new_shape(self):
        """Frees the previous shape's tensors and compiled graphs."""
        gc.collect()
        if not self.opts.no_compile:
            torch._dynamo.reset()
        torch.cuda.empty_cache()

    def compile(self, fn):
        return None if self.opts.no_compile else torch.compile(fn, dynamic=False)

    def time(self, fn):
        return triton.testing.do_bench(fn, warmup=self.opts.warmup, rep=self.opts.reps,
                                       return_mode="median")

    def measured(self, kernel, dtype, shape, system, ms=None, moved=None, status=None):
        """A row (said on stderr now; written to the CSV by write() once its shape is done)."""
        if status:
            ms_text = gbps_text = status
            say(f"{kernel:16} {dtype:4} {shape:>12} {system:13} {status}")
        else:
            ms_text, gbps_text = f"{ms:.5f}", f"{moved / ms / 1e6:.1f}"
            say(f"{kernel:16} {dtype:4} {shape:>12} {system:13} {ms:9.5f} ms {gbps_text:>8} GB/s")
        return dict(zip(CSV_COLUMNS, (kernel, dtype, str(shape), system, ms_text, gbps_text,
                                      status or "ok", "")))

    def write(self, row):
        self.rows.append(row)
        self.writer.writerow([row.get(c, "") for c in CSV_COLUMNS])
        self.out.flush()

    def host_us(self, fn, calls=20):
        """Host time per call of fn, enqueueing only (--peer-check): a figure near the timed
        GPU time means the timing measured the host."""
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        return elapsed / calls * 1e6

    def case(self, kernel, dtype, shape, moved, systems, check):
        """Checks, then times, each (name, fn) of `systems` on one shape, then the copy of the
        same number of bytes; then the peer guard judges the peers' figures and the shape's rows
        are written. fn returns its outputs by name for check(name, outputs), which returns a
        list of problems; fn None is a system not run (--no-compile), a string one skipped for
        the reason it gives."""
        rows = []
        for name, fn in systems:
            if fn is None or not self.runs(name):
                continue
            if isinstance(fn, str):
                say(f"{kernel:16} {dtype:4} {shape:>12} {name:13} skipped: {fn}")
                continue
            try:
                problems = check(name, fn())
                torch.cuda.synchronize()
                if not problems:
                    ms = self.time(fn)
                    if name == "tritium":
                        problems = [f"after timing: {p}" for p in check(name, fn())]
                    host = self.host_us(fn) if self.opts.peer_check and not problems else None
            except Exception as e:  # one system's failure leaves the others' figures
                say(f"FAILED {kernel} {dtype} {shape} {name}: {type(e).__name__}: {e}")
                rows.append(self.measured(kernel, dtype, shape, name, status="failed"))
                continue
            if problems:
                for p in problems:
                    say(f"WRONG {kernel} {dtype} {shape} {name}: {p}")
                rows.append(self.measured(kernel, dtype, shape, name, status="wrong"))
            else:
                rows.append(self.measured(kernel, dtype, shape, name, ms, moved))
                if host is not None:
                    rows[-1]["host_us"] = host
        try:
            # Half the bytes read, half written, like every kernel here.
            src = torch.empty(moved // 2, dtype=torch.uint8, device=DEVICE)
            dst = torch.empty_like(src)
            rows.append(self.measured(kernel, dtype, shape, "copy",
                                      self.time(lambda: dst.copy_(src)), 2 * src.numel()))
        except Exception as e:
            say(f"FAILED {kernel} {dtype} {shape} copy: {type(e).__name__}: {e}")
            rows.append(self.measured(kernel, dtype, shape, "copy", status="failed"))
        by_system = {r["system"]: r["GBps"] for r in rows}
        for system, reason in self.guard.judge(kernel, dtype, str(shape), by_system).items():
            say(f"REFUSED {kernel} {dtype} {shape} {system}: {reason}")
            for r in rows:
                if r["system"] == system:
                    r["status"], r["reason"] = "refused", reason
        for r in rows:
            self.write(r)

    def run(self, kernel):
        """Every shape of `kernel`, each in its own call of case_<kernel>: its tensors are freed
        before the next shape allocates, and a shape that cannot be set up (out of memory, say)
        leaves the others."""
        sizes = (self.opts.sizes or self.sizes.get(kernel)
                 or SIZES[kernel][1 if self.opts.quick else 0])
        dtypes = DTYPES[kernel]
        if self.opts.dtypes:
            dtypes = [d for d in ALL_DTYPES[kernel] if d in self.opts.dtypes]
        for dtype in dtypes:
            for size in sizes:
                if self.opts.time_limit and time.time() - self.started > self.opts.time_limit:
                    self.left_out.append(f"{kernel} {dtype} {size}")
                    continue
                self.new_shape()
                try:
                    getattr(self, f"case_{kernel}")(dtype, size)
                except Exception as e:
                    say(f"FAILED {kernel} {dtype} {size}: {type(e).__name__}: {e}")
                    # One line: a multi-line message (Triton's compile errors) would break the CSV.
                    text = " | ".join(str(e).split("\n"))[:300]
                    print(f"# {kernel} {dtype} {size} failed: {type(e).__name__}: {text}",
                          file=self.out, flush=True)
        self.new_shape()

    # ---------------------------------------------------------------- one function per kernel
    def case_add(self, dtype, n):
        x = torch.randn(n, device=DEVICE)
        y = torch.randn(n, device=DEVICE)
        out = {s: torch.empty_like(x) for s in ("tritium", "triton", "torch")}
        tritium = self.tritium.bind("tritium_vector_add", DTYPE_CODE[dtype], out["tritium"], x, y,
                                    n)
        grid = (triton.cdiv(n, 1024),)
        compiled = self.compile(lambda a, b: a + b)
        self.case("add", dtype, n, 3 * n * x.element_size(), [
            ("tritium", giving(tritium, out=out["tritium"])),
            ("triton", giving(lambda: tt_add[grid](x, y, out["triton"], n, BLOCK=1024),
                              out=out["triton"])),
            ("torch", giving(lambda: torch.add(x, y, out=out["torch"]), out=out["torch"])),
            ("torch_compile", compiled and (lambda: {"out": compiled(x, y)})),
        ], against({"out": x + y}))

    def case_dropout(self, dtype, n, p=0.5, seed=1234):
        x = torch.rand(n, device=DEVICE) + 1.0  # never 0: out != 0 is exactly the kept mask
        out = {s: torch.empty_like(x) for s in ("tritium", "triton")}
        tritium = self.tritium.bind("tritium_dropout", DTYPE_CODE[dtype], out["tritium"], x, n,
                                    p, seed)
        grid = (triton.cdiv(n, 1024),)

        def triton_dropout(into):
            tt_dropout[grid](x, into, n, p, seed, BLOCK=1024)

        # tritium promises Triton's mask bit for bit: Triton's output for the same seed is its
        # reference, computed apart so that it exists even if the triton row fails.
        try:
            reference = torch.empty_like(x)
            triton_dropout(reference)
            mask = reference != 0
            torch.cuda.synchronize()
            del reference
        except Exception as e:
            say(f"dropout {n}: no Triton reference mask ({type(e).__name__}: {e}); tritium's "
                "mask is checked only for its kept fraction")
            mask = None

        def check(system, outputs):
            y = outputs["out"]
            kept = y != 0
            problems = [m for m in [mismatch("out", y, torch.where(kept, x / (1 - p), 0.0))] if m]
            fraction = int(kept.sum()) / n
            if n >= 2**16 and abs(fraction - (1 - p)) > 0.01:
                problems.append(f"kept {fraction:.4f} of the elements, expected {1 - p}")
            if system == "tritium" and mask is not None:
                differ = kept != mask
                count = int(differ.sum())
                if count:
                    first = int(differ.to(torch.uint8).argmax())
                    problems.append(f"mask differs from Triton's tl.rand(seed, offsets) > p at "
                                    f"{count} of {n} elements (first at {first})")
            return problems

        compiled = self.compile(lambda a: F.dropout(a, p, training=True))
        self.case("dropout", dtype, n, 2 * n * x.element_size(), [
            ("tritium", giving(tritium, out=out["tritium"])),
            ("triton", giving(lambda: triton_dropout(out["triton"]), out=out["triton"])),
            ("torch", lambda: {"out": F.dropout(x, p, training=True)}),
            ("torch_compile", compiled and (lambda: {"out": compiled(x)})),
        ], check)

    def case_layernorm(self, dtype, N, eps=1e-5):
        M, dt, code, shape = M_ROWS, torch_dtype(dtype), DTYPE_CODE[dtype], f"{M_ROWS}x{N}"
        x = torch.randn(M, N, device=DEVICE, dtype=dt)
        w = torch.rand(N, device=DEVICE, dtype=dt)
        b = torch.rand(N, device=DEVICE, dtype=dt)
        dy = 0.1 * torch.randn_like(x)
        elem = x.element_size()
        # The fp32 reference from the same (rounded) inputs. Every backward below is given its
        # mean and rstd, so that a wrong forward does not make a backward look wrong too.
        xf, wf, bf = (t.float().requires_grad_() for t in (x, w, b))
        yf = F.layer_norm(xf, (N,), wf, bf, eps)
        dxf, dwf, dbf = torch.autograd.grad(yf, (xf, wf, bf), dy.float())
        mean = xf.detach().mean(1)
        rstd = torch.rsqrt(xf.detach().var(1, correction=0) + eps)
        ref_fwd = {"y": yf.detach(), "mean": mean, "rstd": rstd}
        ref_bwd = {"dx": dxf, "dw": dwf, "db": dbf}
        del xf, wf, bf, yf

        y_t, mean_t, rstd_t = torch.empty_like(x), torch.empty_like(mean), torch.empty_like(rstd)
        forward = self.tritium.bind("tritium_layer_norm_forward", code, y_t, mean_t, rstd_t, x, w,
                                    b, M, N, 0, 0, eps)
        compiled = self.compile(lambda a, c, d: F.layer_norm(a, (N,), c, d, eps))
        self.case("layernorm_fwd", dtype, shape, 2 * M * N * elem, [
            ("tritium", giving(forward, y=y_t, mean=mean_t, rstd=rstd_t)),
            ("triton", lambda: dict(zip(("y", "mean", "rstd"), triton_layernorm(x, w, b, eps)))),
            ("torch", lambda: {"y": F.layer_norm(x, (N,), w, b, eps)}),
            ("torch_compile", compiled and (lambda: {"y": compiled(x, w, b)})),
        ], against(ref_fwd))

        workspace = torch.empty(self.tritium.workspace_bytes(
            "tritium_layer_norm_backward_workspace", M, N), dtype=torch.uint8, device=DEVICE)
        dx_t, dw_t, db_t = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)
        backward = self.tritium.bind("tritium_layer_norm_backward", code, dx_t, dw_t, db_t, dy, x,
                                     w, mean, rstd, M, N, 0, 0, 0, workspace, workspace.numel())
        inputs = tuple(t.detach().clone().requires_grad_() for t in (x, w, b))
        names = ("dx", "dw", "db")
        if triton_layernorm_fits(N, elem):
            # The tutorial sums dw and db in the weights' dtype: only its dx is checked.
            triton_bwd = lambda: {"dx": triton_layernorm_bwd(dy, x, w, mean, rstd)[0]}  # noqa
        else:
            triton_bwd = "the tutorial's backward holds a row in one block of at most 64 KB"
        self.case("layernorm_bwd", dtype, shape, 3 * M * N * elem, [
            ("tritium", giving(backward, dx=dx_t, dw=dw_t, db=db_t)),
            ("triton", triton_bwd),
            ("torch", autograd_bwd(lambda a, c, d: F.layer_norm(a, (N,), c, d, eps), inputs,
                                   names, dy)),
            ("torch_compile", compiled and autograd_bwd(compiled, inputs, names, dy)),
        ], against(ref_bwd))

    def case_rmsnorm(self, dtype, N, eps=1e-6):
        M, dt, code, shape = M_ROWS, torch_dtype(dtype), DTYPE_CODE[dtype], f"{M_ROWS}x{N}"
        x = torch.randn(M, N, device=DEVICE, dtype=dt)
        w = torch.rand(N, device=DEVICE, dtype=dt)
        dy = 0.1 * torch.randn_like(x)
        elem = x.element_size()
        xf, wf = (t.float().requires_grad_() for t in (x, w))
        yf = xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + eps) * wf
        dxf, dwf = torch.autograd.grad(yf, (xf, wf), dy.float())
        rstd = torch.rsqrt(xf.detach().pow(2).mean(1) + eps)
        ref_fwd = {"y": yf.detach(), "rstd": rstd}
        ref_bwd = {"dx": dxf, "dw": dwf}
        del xf, wf, yf

        y_t, rstd_t = torch.empty_like(x), torch.empty_like(rstd)
        forward = self.tritium.bind("tritium_rms_norm_forward", code, y_t, rstd_t, x, w, M, N, 0,
                                    0, eps)
        compiled = self.compile(lambda a, c: F.rms_norm(a, (N,), c, eps))
        self.case("rmsnorm_fwd", dtype, shape, 2 * M * N * elem, [
            ("tritium", giving(forward, y=y_t, rstd=rstd_t)),
            ("triton", lambda: dict(zip(("y", "rstd"), triton_rmsnorm(x, w, eps)))),
            ("torch", lambda: {"y": F.rms_norm(x, (N,), w, eps)}),
            ("torch_compile", compiled and (lambda: {"y": compiled(x, w)})),
        ], against(ref_fwd))

        workspace = torch.empty(self.tritium.workspace_bytes(
            "tritium_rms_norm_backward_workspace", M, N), dtype=torch.uint8, device=DEVICE)
        dx_t, dw_t = torch.empty_like(x), torch.empty_like(w)
        backward = self.tritium.bind("tritium_rms_norm_backward", code, dx_t, dw_t, dy, x, w, rstd,
                                     M, N, 0, 0, 0, workspace, workspace.numel())
        inputs = tuple(t.detach().clone().requires_grad_() for t in (x, w))
        names = ("dx", "dw")
        self.case("rmsnorm_bwd", dtype, shape, 3 * M * N * elem, [
            ("tritium", giving(backward, dx=dx_t, dw=dw_t)),
            ("triton", lambda: dict(zip(names, triton_rmsnorm_bwd(dy, x, w, rstd)))),
            ("torch", autograd_bwd(lambda a, c: F.rms_norm(a, (N,), c, eps), inputs, names, dy)),
            ("torch_compile", compiled and autograd_bwd(compiled, inputs, names, dy)),
        ], against(ref_bwd))

    def case_crossentropy(self, dtype, V):
        M, dt, code, shape = M_ROWS, torch_dtype(dtype), DTYPE_CODE[dtype], f"{M_ROWS}x{V}"
        x = torch.randn(M, V, device=DEVICE, dtype=dt)
        target = torch.randint(0, V, (M,), device=DEVICE)
        elem = x.element_size()
        xf = x.float().requires_grad_()
        loss = F.cross_entropy(xf, target, reduction="none")
        mean = loss.mean()
        (dxf,) = torch.autograd.grad(mean, xf)
        lse = torch.logsumexp(xf.detach(), 1)
        ref_fwd = {"loss": loss.detach(), "lse": lse, "mean": mean.detach().reshape(1),
                   "count": torch.full((1,), float(M), device=DEVICE)}
        # The backwards' inputs come from the reference: lse, and stats = (mean, count) as
        # tritium's forward writes them.
        stats = torch.stack([mean.detach(), torch.tensor(float(M), device=DEVICE)])
        del xf, loss, mean

        loss_t, lse_t = torch.empty_like(lse), torch.empty_like(lse)
        stats_t = torch.empty(2, device=DEVICE, dtype=torch.float32)
        forward = self.tritium.bind("tritium_cross_entropy_forward", code, loss_t, lse_t, stats_t,
                                    x, target, M, V, 0, -100, 0.0)

        def triton_fwd():
            rows, lses, mean = triton_crossentropy(x, target)
            return {"loss": rows, "lse": lses, "mean": mean.reshape(1)}

        # torch's cross_entropy returns the mean over the rows: tritium's stats[0].
        compiled = self.compile(lambda a, t: F.cross_entropy(a, t))
        self.case("crossentropy_fwd", dtype, shape, M * V * elem, [
            ("tritium", giving(forward, loss=loss_t, lse=lse_t, mean=stats_t[0:1],
                               count=stats_t[1:2])),
            ("triton", triton_fwd),
            ("torch", lambda: {"mean": F.cross_entropy(x, target).reshape(1)}),
            ("torch_compile", compiled and (lambda: {"mean": compiled(x, target).reshape(1)})),
        ], against(ref_fwd))

        dx_t = torch.empty_like(x)
        backward = self.tritium.bind("tritium_cross_entropy_backward", code, dx_t, x, target, lse,
                                     stats, M, V, 0, 0, -100, 0.0, 1.0)
        inputs = (x.detach().clone().requires_grad_(),)
        self.case("crossentropy_bwd", dtype, shape, 2 * M * V * elem, [
            ("tritium", giving(backward, dx=dx_t)),
            ("triton", lambda: {"dx": triton_crossentropy_bwd(x, target, lse)}),
            ("torch", autograd_bwd(lambda a, t: F.cross_entropy(a, t), inputs, ("dx",), None,
                                   (target,))),
            ("torch_compile", compiled and autograd_bwd(compiled, inputs, ("dx",), None,
                                                        (target,))),
        ], against({"dx": dxf}))

    def case_softmax(self, dtype, N):
        M, dt, code, shape = M_ROWS, torch_dtype(dtype), DTYPE_CODE[dtype], f"{M_ROWS}x{N}"
        x = torch.randn(M, N, device=DEVICE, dtype=dt)
        y_t = torch.empty_like(x)
        forward = self.tritium.bind("tritium_softmax_forward", code, y_t, x, M, N, 0, 0)
        compiled = self.compile(lambda a: torch.softmax(a, -1))
        self.case("softmax_fwd", dtype, shape, 2 * M * N * x.element_size(), [
            ("tritium", giving(forward, y=y_t)),
            ("triton", lambda: {"y": triton_softmax(x)}),
            ("torch", lambda: {"y": torch.softmax(x, -1)}),
            ("torch_compile", compiled and (lambda: {"y": compiled(x)})),
        ], against({"y": torch.softmax(x.float(), -1)}))


# ------------------------------------------------------------------------------ peer guard
# A peer's figure far below what that peer is known to reach measures the harness (host work
# inside the timed call, a compile in the loop, a grid of one program), not the peer, and a ratio
# against it flatters tritium: the Triton softmax peer once measured about 1 ms per call whatever
# the shape (see triton_softmax). Such a peer is refused: its row says so and why, and it is
# neither a best peer nor in a ratio. Two floors, either one refuses:
#
# FAR_BELOW_ANCHOR: under half the peer's reference figure for the shape (tools/peer_anchors.csv,
# scaled to this GPU). In the H200 runs of 2026-11-24 (docs/perf/kernels-*.csv), 69 of the 84 peer
# figures that have a reference (softmax aside) were within 10% of it and the rest 0.71-1.36 of
# it, except the norms' backward at N <= 1024 (0.32-0.53, moving between runs); the softmax peer
# with its old launcher was at 0.015-0.075. Half sits between the two.
FAR_BELOW_ANCHOR = 0.5
# MIN_COPY_FRACTION: under a tenth of the copy of the same bytes, timed in the same run (the
# floor where no reference figure exists). Every kernel here moves its bytes once and is bound by
# memory. In the same runs, every peer within half of its reference figure moved its bytes at
# 0.11 of the copy or more; those under a tenth were the old softmax launcher (0.007-0.067), the
# tutorial-style RMSNorm and LayerNorm kernels holding a whole row of N >= 32000 per program
# (0.02-0.05), and backwards of short rows, N <= 1024 (0.07-0.10).
MIN_COPY_FRACTION = 0.1
ANCHORS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer_anchors.csv")
# A GPU without figures of its own uses those of the family named here, scaled by this run's copy
# bandwidth over theirs (the row `copy,any,peak,copy` of the anchors file): both are Hopper, and
# these kernels are bound by memory bandwidth.
SCALED_FAMILIES = {"H100": "H200"}
COPY_BYTES = 256 << 20  # the copy timed once per run (4096 x 16384 fp32, the anchors' largest)
COPY_COMMENT = "copy bandwidth:"  # how the CSV's comment line naming it starts


def load_anchors(path=ANCHORS_FILE):
    """{(gpu, kernel, dtype, shape, system): (GB/s, date)} from the anchors file (lines starting
    with '#' are comments); empty, with a note on stderr, if it cannot be read."""
    try:
        rows = read_csv(path)
        return {(r["gpu"], r["kernel"], r["dtype"], r["shape"], r["system"]):
                (float(r["GBps"]), r["date"]) for r in rows}
    except (OSError, KeyError, ValueError, TypeError) as e:
        say(f"bench_kernels: no peer anchors ({path}: {type(e).__name__}: {e}); only the copy "
            "floor guards the peers")
        return {}


def names_family(gpu, family):
    """Whether the device name `gpu` names `family` as a word: H200 in "NVIDIA H200", not in
    "NVIDIA GH200"."""
    return re.search(rf"\b{re.escape(family)}\b", gpu or "") is not None


class PeerGuard:
    """Judges the peers' figures of one shape against their anchors and the copy (see
    FAR_BELOW_ANCHOR and MIN_COPY_FRACTION). gpu: the device's name; copy: this run's copy
    bandwidth in GB/s (None if unknown: then no scaled anchors)."""

    def __init__(self, gpu, copy, anchors=None):
        self.gpu, self.copy = gpu, copy
        self.anchors = load_anchors() if anchors is None else anchors
        families = {key[0] for key in self.anchors}
        self.family, self.scale = None, None
        for family in sorted(families):
            if names_family(gpu, family):
                self.family, self.scale = family, 1.0
        if self.family is None:
            for mine, theirs in SCALED_FAMILIES.items():
                reference = self.anchors.get((theirs, "copy", "any", "peak", "copy"))
                if names_family(gpu, mine) and reference and copy:
                    self.family, self.scale = theirs, copy / reference[0]

    def basis(self):
        """One line: which anchors apply here."""
        floor = f"a peer under {MIN_COPY_FRACTION:g} x the copy of its bytes is refused"
        if self.family is None:
            return f"no anchors for {self.gpu or 'this GPU'}; {floor}"
        scaled = ("" if self.scale == 1.0 else
                  f" x {self.scale:.3f} (this run's copy {self.copy:.0f} GB/s / "
                  f"{self.anchors[(self.family, 'copy', 'any', 'peak', 'copy')][0]:.0f})")
        return (f"anchors: {self.family} figures{scaled}; a peer under {FAR_BELOW_ANCHOR:g} x "
                f"its anchor, or under {MIN_COPY_FRACTION:g} x the copy of its bytes, is refused")

    def anchor(self, kernel, dtype, shape, system):
        """(GB/s on this GPU, text naming the reference) or None."""
        found = self.family and self.anchors.get((self.family, kernel, dtype, shape, system))
        if not found:
            return None
        gbps, date = found
        text = f"{gbps:.0f} GB/s ({self.family}, {date})"
        if self.scale != 1.0:
            text += f" x {self.scale:.3f} = {gbps * self.scale:.0f}"
        return gbps * self.scale, text

    def judge(self, kernel, dtype, shape, figures):
        """{peer: reason} for each peer refused at this shape. figures: {system: GB/s} (numbers,
        or the CSV's text: 'wrong' and 'failed' are not judged), the copy among them."""
        values = {s: number(g) for s, g in figures.items()}
        copy = values.get("copy")
        peers = {s: g for s, g in values.items() if s in PEERS and g is not None}
        refused = {}
        for system, gbps in peers.items():
            reasons = []
            if copy and gbps < MIN_COPY_FRACTION * copy:
                reasons.append(f"under {MIN_COPY_FRACTION:g} x the copy of the same bytes in this "
                               f"run ({copy:.0f} GB/s)")
            anchor = self.anchor(kernel, dtype, shape, system)
            if anchor and gbps < FAR_BELOW_ANCHOR * anchor[0]:
                reasons.append(f"under {FAR_BELOW_ANCHOR:g} x its reference figure {anchor[1]}")
            if reasons:
                refused[system] = f"{gbps:.1f} GB/s is " + ", and ".join(reasons)
        # A best-peer figure judges the best peer left standing: if even that one is far below
        # it, every peer of the shape is.
        anchor = self.anchor(kernel, dtype, shape, "best")
        standing = {s: g for s, g in peers.items() if s not in refused}
        if anchor and standing:
            best = max(standing, key=standing.get)
            if standing[best] < FAR_BELOW_ANCHOR * anchor[0]:
                for system in standing:
                    refused[system] = (f"the best peer here ({best}, {standing[best]:.1f} GB/s) is "
                                       f"under {FAR_BELOW_ANCHOR:g} x the best peer's reference "
                                       f"figure {anchor[1]}")
        return refused


def refusals(rows, guard=None):
    """{(kernel, dtype, shape, system): reason} for every refused peer of `rows`: those the CSV
    marks refused, and those `guard` refuses (for CSVs written before the guard, or after the
    anchors changed)."""
    found = {}
    for (kernel, dtype, shape), systems in group_rows(rows).items():
        if guard is not None:
            for system, reason in guard.judge(kernel, dtype, shape, systems).items():
                found[(kernel, dtype, shape, system)] = reason
    for r in rows:
        if r.get("status") == "refused":
            found[(r["kernel"], r["dtype"], r["shape"], r["system"])] = r.get("reason") or "refused"
    return found


# ------------------------------------------------------------------------ table and plot
def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def read_csv(path):
    with open(path) as f:
        return read_csv_text(f.read())


def read_csv_text(text):
    """The rows of a CSV written by this tool; lines starting with '#' are comments."""
    lines = text.splitlines(keepends=True)
    return list(csv.DictReader(line for line in lines if line.strip() and not line.startswith("#")))


def read_guard(path, rows):
    """The PeerGuard of a CSV written by this tool: the device named by its first comment line
    ("# NAME, N SMs; ..."), the copy bandwidth by its COPY_COMMENT line, or failing that (CSVs
    written before it) the fastest copy among its rows. None without a device name."""
    gpu = copy = None
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                continue
            text = line[1:].strip()
            match = re.match(r"(.+?), \d+ SMs;", text)
            if gpu is None and match:
                gpu = match.group(1)
            if text.startswith(COPY_COMMENT):
                copy = number(text[len(COPY_COMMENT):].split()[0])
    if gpu is None:
        return None
    if copy is None:
        copies = [number(r["GBps"]) for r in rows if r["system"] == "copy"]
        copy = max((c for c in copies if c is not None), default=None)
    return PeerGuard(gpu, copy)


def group_rows(rows):
    """{(kernel, dtype, shape): {system: GBps text}} in the order the rows came."""
    groups = {}
    for r in rows:
        groups.setdefault((r["kernel"], r["dtype"], r["shape"]), {})[r["system"]] = r["GBps"]
    return groups


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def summary(rows, guard=None):
    """The table, as lines: per kernel and shape, tritium against its best peer and the copy.
    Peers refused by the guard (marked in the CSV, or judged here by `guard`) are left out of
    the best peer and listed below the table with the reason."""
    lines = ["# GB/s; target = min(1.1 x best peer, 0.92 x copy); t/best, t/copy: tritium's ratios",
             f"{'kernel':16} {'dtype':5} {'shape':>12} {'tritium':>8}  {'best peer':13} "
             f"{'GB/s':>7} {'copy':>7} {'t/best':>6} {'t/copy':>6} {'target':>7}  meets"]
    if guard is not None:
        lines.insert(1, f"# peer guard: {guard.basis()}")
    refused = refusals(rows, guard)
    met = total = 0
    not_counted = {}  # 'system status' -> shapes
    # Kernels in KERNEL_ORDER (forward rows before backward ones), shapes as they were run.
    ordered = sorted(group_rows(rows).items(), key=lambda item: kernel_rank(item[0][0]))
    for (kernel, dtype, shape), systems in ordered:
        ours_text = systems.get("tritium")
        ours, copy = number(ours_text), number(systems.get("copy"))
        peers, turned_away = {}, []
        for p in PEERS:
            if (kernel, dtype, shape, p) in refused:
                turned_away.append(p)
            elif p in systems and number(systems[p]) is not None:
                peers[p] = number(systems[p])
            elif p in systems:  # wrong or failed: not a figure to beat
                not_counted.setdefault(f"{p} {systems[p]}", []).append(f"{kernel} {dtype} {shape}")
        best = max(peers, key=peers.get) if peers else None
        best_gbps = peers.get(best)
        targets = ([1.1 * best_gbps] if best else []) + ([0.92 * copy] if copy else [])
        target = min(targets) if targets else None
        if ours_text is None:
            meets = "-"  # tritium was not run here
        elif ours is None:
            meets = ours_text.upper()  # WRONG or FAILED
        elif target is None:
            meets = "?"
        else:
            meets = "yes" if ours >= target else "no"
        if ours_text is not None:
            total += 1
            met += meets == "yes"
        lines.append(
            f"{kernel:16} {dtype:5} {shape:>12} "
            f"{ours_text or '-' if ours is None else fmt(ours, '.0f'):>8}  "
            f"{best or '-':13} {fmt(best_gbps, '.0f'):>7} {fmt(copy, '.0f'):>7} "
            f"{fmt(ours / best_gbps if ours is not None and best_gbps else None, '.3f'):>6} "
            f"{fmt(ours / copy if ours is not None and copy else None, '.3f'):>6} "
            f"{fmt(target, '.0f'):>7}  {meets}"
            + (f"  (REFUSED: {', '.join(turned_away)})" if turned_away else ""))
    lines.append(f"# tritium meets the target at {met} of {total} shapes")
    for what, shapes in not_counted.items():
        lines.append(f"# not counted as a peer: {what} at {len(shapes)} shapes ("
                     + ", ".join(shapes[:3]) + (", ..." if len(shapes) > 3 else "") + ")")
    for (kernel, dtype, shape, system), reason in refused.items():
        lines.append(f"# REFUSED as a peer: {system} {kernel} {dtype} {shape}: {reason}")
    return lines


KERNEL_ORDER = ("add", "dropout", "layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd",
                "crossentropy_fwd", "crossentropy_bwd", "softmax_fwd")


def kernel_rank(kernel):
    return KERNEL_ORDER.index(kernel) if kernel in KERNEL_ORDER else len(KERNEL_ORDER)


COLORS = {"tritium": "tab:red", "triton": "tab:blue", "torch": "tab:orange",
          "torch_compile": "tab:green", "copy": "black"}


def plot(rows, path, refused=()):
    """One panel per kernel direction: GB/s against the size (n, or N / V at M = 4096), one line
    per system (and dtype: solid, then dashed); a red x marks a tritium result that was wrong
    or failed. Peers' figures in `refused` ((kernel, dtype, shape, system) keys) are not drawn."""
    rows = [r for r in rows if (r["kernel"], r["dtype"], r["shape"], r["system"]) not in refused]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say(f"bench_kernels: matplotlib is not installed: no plot {path}")
        return False
    kernels = sorted({r["kernel"] for r in rows}, key=lambda k: (kernel_rank(k), k))
    if not kernels:
        say("bench_kernels: no rows to plot")
        return False
    cols = min(3, len(kernels))
    nrows = (len(kernels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.9 * nrows), squeeze=False)
    for ax in axes.flat[len(kernels):]:
        ax.set_visible(False)
    for ax, kernel in zip(axes.flat, kernels):
        mine = [r for r in rows if r["kernel"] == kernel]
        dtypes = list(dict.fromkeys(r["dtype"] for r in mine))
        systems = list(dict.fromkeys(r["system"] for r in mine))
        systems.sort(key=lambda s: list(COLORS).index(s) if s in COLORS else len(COLORS))
        for dtype in dtypes:
            style = "-" if dtypes.index(dtype) == 0 else "--"
            for system in systems:
                points = sorted((size_of(r["shape"]), number(r["GBps"])) for r in mine
                                if r["dtype"] == dtype and r["system"] == system
                                and number(r["GBps"]) is not None)
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o",
                            markersize=3, color=COLORS.get(system),
                            linewidth=2.2 if system == "tritium" else 1.2,
                            label=f"{system} {dtype}" if len(dtypes) > 1 else system)
            bad = [size_of(r["shape"]) for r in mine if r["dtype"] == dtype
                   and r["system"] == "tritium" and number(r["GBps"]) is None]
            if bad:
                ax.plot(bad, [0] * len(bad), "x", color="tab:red", markersize=9,
                        label=f"tritium {dtype} wrong/failed" if len(dtypes) > 1
                        else "tritium wrong/failed")
        row_kernel = any("x" in r["shape"] for r in mine)
        ax.set_xscale("log", base=2)
        ax.set_title(kernel + (f" (M = {mine[0]['shape'].split('x')[0]})" if row_kernel else ""))
        ax.set_xlabel(("V" if kernel.startswith("crossentropy") else "N") if row_kernel else "n")
        ax.set_ylabel("GB/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    say(f"bench_kernels: plot written to {path}")
    return True


def size_of(shape):
    """n for elementwise kernels, the row length for 'MxN'."""
    return int(str(shape).split("x")[-1])


# ------------------------------------------------------------------------------------ main
def parse_size(text):
    text = text.strip()
    for power in ("^", "**"):
        if power in text:
            base, exponent = text.split(power)
            return int(base) ** int(exponent)
    return int(text)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_kernels.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", metavar="KERNEL",
                        help=f"any of {' '.join(KERNELS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip torch.compile (slow to compile)")
    parser.add_argument("--reps", type=float, metavar="MS",
                        help="do_bench's rep: milliseconds of timed repetitions (default 200; "
                        "100 with --peer-check)")
    parser.add_argument("--warmup", type=float, default=25, metavar="MS",
                        help="do_bench's warmup in milliseconds (default 25)")
    parser.add_argument("--sizes", metavar="LIST",
                        help="comma-separated sizes instead of the sweep: n for add/dropout, N or "
                        "V for the row kernels (M = 4096); 2^24 is accepted")
    parser.add_argument("--dtypes", metavar="LIST", help="these of fp32,fp16,bf16 instead of each kernel's default (the row kernels "
                        "take all three; add and dropout fp32 only)")
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="start no new shape after S seconds (the table and plot still "
                        "come), for a machine that stops long commands")
    parser.add_argument("--lib", default="device-bundle", metavar="DIR",
                        help="folder of libtritium_kernels_c.so (default device-bundle/)")
    parser.add_argument("-o", "--output", metavar="FILE", help="CSV here instead of stdout")
    parser.add_argument("--plot", metavar="FILE", help="write the PNG plot here")
    parser.add_argument("--from-csv", metavar="FILE",
                        help="measure nothing: the table (and --plot) from this CSV")
    parser.add_argument("--peer-check", action="store_true",
                        help="time the Triton peers (and torch's, and the copy) at a couple of "
                        "shapes per kernel, without tritium or torch.compile, and print each one "
                        "against its anchor and the copy; exit status 1 if a Triton peer is "
                        "refused, wrong or failed")
    opts = parser.parse_intermixed_args(argv)  # names and options in any order
    unknown = [k for k in opts.kernels if k not in KERNELS]
    if unknown:
        parser.error(f"unknown kernel {' '.join(unknown)}; choose from {' '.join(KERNELS)}")
    opts.kernels = [k for k in KERNELS if k in opts.kernels] or list(KERNELS)
    try:
        opts.sizes = [parse_size(s) for s in opts.sizes.split(",")] if opts.sizes else None
    except ValueError:
        parser.error(f"--sizes={opts.sizes}: expected integers such as 4096,2^20")
    if opts.dtypes:
        opts.dtypes = opts.dtypes.split(",")
        wrong = [d for d in opts.dtypes if d not in DTYPE_CODE]
        if wrong:
            parser.error(f"--dtypes: unknown {','.join(wrong)}; choose from fp32,fp16,bf16")
    if opts.reps is None:
        opts.reps = 100 if opts.peer_check else 200
    if opts.peer_check:
        opts.no_compile = True
    if opts.reps <= 0 or opts.warmup < 0:
        parser.error("--reps must be positive and --warmup not negative")
    return opts


# --peer-check's shapes where --sizes is not given: the smallest and a large size of each
# kernel that has reference figures there.
PEER_CHECK_SIZES = {"add": [2**24], "dropout": [2**24], "layernorm": [1024, 8192],
                    "rmsnorm": [1024, 8192], "crossentropy": [32000], "softmax": [1024, 8192]}


def peer_check(opts):
    """The Triton peers (with torch's and the copy) at PEER_CHECK_SIZES, each against its anchor
    and the copy, as a table on stdout; the CSV only with -o. Returns the exit status: 1 if a
    Triton peer was refused, wrong or failed."""
    out = open(opts.output if opts.output else os.devnull, "w")
    bench = Bench(opts, out, systems=("triton", "torch", "copy"), sizes=PEER_CHECK_SIZES)
    bench.header()
    # The query the old softmax launcher made on every call (see triton_softmax), timed here.
    query = triton.runtime.driver.active.utils.get_device_properties
    start = time.perf_counter()
    for _ in range(20):
        query(0)
    query_us = (time.perf_counter() - start) / 20 * 1e6
    try:
        for kernel in opts.kernels:
            try:
                bench.run(kernel)
            except Exception as e:
                say(f"FAILED {kernel}: {type(e).__name__}: {e}")
    finally:
        out.close()
    guard = bench.guard
    print(f"# {torch.cuda.get_device_name(0)}; triton {triton.__version__}, torch "
          f"{torch.__version__}; copy bandwidth {fmt(guard.copy, '.0f')} GB/s")
    print(f"# peer guard: {guard.basis()}")
    print(f"# triton.runtime.driver.active.utils.get_device_properties: {query_us:.0f} us per "
          "call (asked once per device by the softmax peer's launcher)")
    print("# host us: the host time per call of the system's function, enqueueing only; at or "
          "above ms x 1000 the timing measured the host, not the kernel")
    print(f"{'kernel':16} {'dtype':5} {'shape':>12} {'system':7} {'ms':>9} {'GB/s':>7} "
          f"{'of copy':>7} {'anchor':>7} {'host us':>8}  status")
    copies = {(r["kernel"], r["dtype"], r["shape"]): number(r["GBps"]) for r in bench.rows
              if r["system"] == "copy"}
    bad = total = 0
    for r in bench.rows:
        if r["system"] == "copy":
            continue
        where = (r["kernel"], r["dtype"], r["shape"])
        gbps, copy = number(r["GBps"]), copies.get(where)
        anchor = guard.anchor(*where, r["system"]) or guard.anchor(*where, "best")
        status = r["status"] + (f": {r['reason']}" if r.get("reason") else "")
        if r["system"] == "triton":
            total += 1
            bad += r["status"] != "ok"
        print(f"{r['kernel']:16} {r['dtype']:5} {r['shape']:>12} {r['system']:7} "
              f"{r['ms']:>9} {fmt(gbps, '.0f'):>7} "
              f"{fmt(gbps / copy if gbps is not None and copy else None, '.3f'):>7} "
              f"{fmt(anchor and anchor[0], '.0f'):>7} {fmt(r.get('host_us'), '.1f'):>8}  {status}")
    print(f"# peer check: {total - bad} of {total} Triton peers pass"
          + ("" if not bench.left_out else f"; not run (--time-limit): {', '.join(bench.left_out)}"))
    return 1 if bad or not total else 0


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.from_csv:
        rows = read_csv(opts.from_csv)
        guard = read_guard(opts.from_csv, rows)
        if opts.plot:
            plot(rows, opts.plot, refusals(rows, guard))
        print("\n".join(summary(rows, guard)), flush=True)
        return 0
    if MISSING is not None:
        raise SystemExit(f"bench_kernels: measuring needs torch and triton ({MISSING})")
    if not torch.cuda.is_available():
        raise SystemExit("bench_kernels: no CUDA device")
    torch.manual_seed(0)
    if opts.peer_check:
        return peer_check(opts)
    out = open(opts.output, "w") if opts.output else sys.stdout
    bench = Bench(opts, out)
    bench.header()
    try:
        for kernel in opts.kernels:
            try:
                bench.run(kernel)
            except Exception as e:  # a failure outside any one shape
                say(f"FAILED {kernel}: {type(e).__name__}: {e}")
                text = " | ".join(str(e).split("\n"))[:300]
                print(f"# {kernel} stopped: {type(e).__name__}: {text}", file=out, flush=True)
    finally:
        if out is not sys.stdout:
            out.close()
    say(f"bench_kernels: {len(bench.rows)} rows in {time.time() - bench.started:.0f} s")
    if bench.left_out:
        note = (f"--time-limit={opts.time_limit:g} reached; not run: " + ", ".join(bench.left_out))
        say(f"bench_kernels: {note}")
        with open(opts.output, "a") if opts.output else contextlib.nullcontext(sys.stdout) as f:
            print(f"# {note}", file=f, flush=True)
    if opts.plot:
        plot(bench.rows, opts.plot, refusals(bench.rows, bench.guard))
    table = "\n".join(summary(bench.rows, bench.guard))
    print(table, file=sys.stdout if opts.output else sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
