"""The peers of tritium's softmax benchmark, timed the way bench_softmax times tritium: CUDA
events, L2 flushed (a memset of twice the L2) before every repetition, median of repetitions.
Forward: GB/s = 2*M*N*bytes/time; systems: Triton's tutorial fused-softmax kernel (computing in
fp32 for fp16/bf16 rows, as tritium does), torch.softmax and torch.compile(torch.softmax).
Backward (--backward): GB/s = 3*M*N*bytes/time (o and dout read, dx written); systems: a Triton
kernel in the tutorial's style (the row in registers, persistent grid),
aten._softmax_backward_data and torch.compile of o * (g - (o * g).sum(-1, keepdim=True)).
Also the device-to-device copy (y.copy_(x), M*N*bytes copied, GB/s = 2*M*N*bytes/time: the copy
bandwidth, the ceiling for both directions), and in the default fp32 forward mode the host time
per call and compile time of the Triton kernel.

With --tritium=DIR (the folder of bench_softmax --export=DIR, run on the same shapes) tritium's
kernels are timed here too, the same way in the same process (columns tritium_GBps, tritium_plan),
so that tritium, its peers and the copy share one harness. Their repetitions are interleaved
(--order, see time_all).

A system that fails (Triton runs out of resources for long rows) leaves its cell empty, with the
error on stderr; one whose result is off prints wrong(max error).

usage: python3 tools/peers_softmax.py [--quick | --long | --n=LIST] [--rows=M] [--reps=R]
                                      [--dtype=fp32|fp16|bf16] [--backward]
                                      [--timing=queued|synced] [--order=sequential|interleaved]
                                      [--tritium=DIR] > peers.csv
       python3 tools/peers_softmax.py --compile-time   (run in a fresh process)
Unknown arguments are ignored, so bench_softmax's own options may be passed to both tools."""
import csv
import ctypes
import math
import os
import sys
import time

import torch
import triton
import triton.language as tl
from triton.runtime import driver


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        # The tutorial's kernel; fp16/bf16 rows are computed in fp32 (tl.exp takes fp32 only)
        # and stored back in the output's dtype. Both casts are no-ops for fp32.
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets,
                 softmax_output.to(output_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_backward_kernel(dx_ptr, o_ptr, dout_ptr, dx_row_stride, o_row_stride,
                            dout_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                            num_stages: tl.constexpr):
    """dx = o * (dout - sum(o * dout)), one row in registers per iteration, in fp32."""
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        o = tl.load(o_ptr + row_idx * o_row_stride + col_offsets, mask=mask,
                    other=0.0).to(tl.float32)
        g = tl.load(dout_ptr + row_idx * dout_row_stride + col_offsets, mask=mask,
                    other=0.0).to(tl.float32)
        dot = tl.sum(o * g, axis=0)
        dx = o * (g - dot)
        tl.store(dx_ptr + row_idx * dx_row_stride + col_offsets,
                 dx.to(dx_ptr.dtype.element_ty), mask=mask)


PROPS = driver.active.utils.get_device_properties(torch.cuda.current_device())
_compiled = {}


def _persistent(kernel, key, args, block):
    """The tutorial's launcher: compile once per (kernel, block, dtype, integer specialization),
    persistent grid from registers and shared memory. `args` are the kernel's runtime arguments.
    Triton specializes integer arguments equal to 1 or divisible by 16, so these are part of the
    key: a kernel compiled for 16-divisible strides must not be launched on other rows."""
    num_warps, num_stages = 8, (4 if PROPS["max_shared_mem"] > 200000 else 2)
    key = key + tuple((a == 1, a % 16 == 0) for a in args if isinstance(a, int))
    if key not in _compiled:
        k = kernel.warmup(*args, BLOCK_SIZE=block, num_stages=num_stages, num_warps=num_warps,
                          grid=(1,))
        k._init_handles()
        occ = PROPS["max_num_regs"] // (k.n_regs * PROPS["warpSize"] * num_warps)
        if k.metadata.shared:
            occ = min(occ, PROPS["max_shared_mem"] // k.metadata.shared)
        _compiled[key] = (k, PROPS["multiprocessor_count"] * max(occ, 1))
    return _compiled[key], num_stages


def triton_softmax(x, y):
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    args = (y, x, x.stride(0), y.stride(0), n_rows, n_cols)
    (k, programs), num_stages = _persistent(softmax_kernel, ("fwd", block, x.dtype), args, block)
    k[(min(programs, n_rows), 1, 1)](*args, block, num_stages)


def triton_softmax_backward(o, g, dx):
    n_rows, n_cols = o.shape
    block = triton.next_power_of_2(n_cols)
    args = (dx, o, g, dx.stride(0), o.stride(0), g.stride(0), n_rows, n_cols)
    (k, programs), num_stages = _persistent(softmax_backward_kernel, ("bwd", block, o.dtype),
                                            args, block)
    k[(min(programs, n_rows), 1, 1)](*args, block, num_stages)


class TritiumKernels:
    """tritium's kernels as bench_softmax --export=DIR compiled them (DIR/kernels.csv names each
    cubin and its launch), loaded and launched through the driver API, so that --tritium=DIR
    times them here with the peers' flush, events and allocator, next to the same torch copy.
    A kernel is launched with the arguments it was compiled for: the same M, N and dtype."""

    def __init__(self, folder):
        self.ct, self.folder = ctypes, folder
        self.cu = ctypes.CDLL("libcuda.so.1")
        table = os.path.join(folder, "kernels.csv")
        if not os.path.isfile(table):
            sys.exit(f"peers_softmax: --tritium={folder}: no {table} (write it with "
                     "bench_softmax --export=DIR on the same shapes)")
        with open(table) as f:
            self.table = list(csv.DictReader(f))
        self.functions = {}
        self.modules = []  # kept loaded for the process's lifetime

    def check(self, result, what):
        if result != 0:
            raise RuntimeError(f"{what} failed with CUresult {result}")

    def function(self, entry):
        ct, key = self.ct, entry["cubin"]
        if key not in self.functions:
            with open(os.path.join(self.folder, key), "rb") as f:
                image = f.read()
            module, fn = ct.c_void_p(), ct.c_void_p()
            self.check(self.cu.cuModuleLoadData(ct.byref(module), ct.c_char_p(image)),
                       f"cuModuleLoadData({key})")
            self.check(self.cu.cuModuleGetFunction(ct.byref(fn), module,
                                                   entry["name"].encode()), "cuModuleGetFunction")
            if int(entry["shared_bytes"]) > 48 * 1024:  # MAX_DYNAMIC_SHARED_SIZE_BYTES
                self.check(self.cu.cuFuncSetAttribute(fn, 8, int(entry["shared_bytes"])),
                           "cuFuncSetAttribute")
            if int(entry["cluster_size"]) > 8:  # NON_PORTABLE_CLUSTER_SIZE_ALLOWED
                self.check(self.cu.cuFuncSetAttribute(fn, 14, 1), "cuFuncSetAttribute")
            self.modules.append(module)
            self.functions[key] = fn
        return self.functions[key]

    def launchers(self, rows, n, dname, direction, args):
        """(plan, launch) for each exported kernel of this shape. `args` are the kernel's
        arguments in order: tensors for the pointer parameters, ints for the others."""
        ct = self.ct
        for e in self.table:
            if (int(e["M"]), int(e["N"]), e["dtype"], e["direction"]) != (rows, n, dname,
                                                                           direction):
                continue
            types = e["signature"].split(";")
            if len(types) != len(args):
                raise RuntimeError(f"{e['cubin']}: {len(types)} parameters, {len(args)} given")
            values = []
            for t, a in zip(types, args):
                if t.startswith("*"):
                    values.append(ct.c_uint64(a.data_ptr()))
                elif t.startswith("i64"):
                    values.append(ct.c_int64(a))
                elif t.startswith("i32"):
                    values.append(ct.c_int32(a))
                else:
                    raise RuntimeError(f"{e['cubin']}: parameter type {t} is not supported here")
            params = (ct.c_void_p * len(values))(*[ct.cast(ct.byref(v), ct.c_void_p)
                                                   for v in values])
            fn, grid = self.function(e), int(e["grid"])
            threads, shared = int(e["threads"]), int(e["shared_bytes"])
            stream = ct.c_void_p(torch.cuda.current_stream().cuda_stream)  # time_ms's stream

            def launch(fn=fn, grid=grid, threads=threads, shared=shared, params=params,
                       values=values, stream=stream):
                self.check(self.cu.cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, shared, stream,
                                                  params, None), "cuLaunchKernel")
            yield e["plan"], launch


_flush = None


def flush_l2():
    """A memset of twice the L2 before every repetition, so that no system reads a warm cache."""
    global _flush
    if _flush is None:
        _flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size,
                             dtype=torch.uint8, device="cuda")
    _flush.zero_()


def warm_up(fn):
    """At least 25 ms of GPU time, flushes included (as Triton's do_bench): after host-side work
    the GPU's clocks need milliseconds to come back up, and five calls measured 2-4% slow on
    whichever system came first after a correctness check."""
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(5):
        flush_l2()
        fn()
    t1.record()
    t1.synchronize()
    for _ in range(math.ceil(25.0 / max(t0.elapsed_time(t1) / 5, 1e-3))):
        flush_l2()
        fn()


def time_all(fns, reps):
    """{name: median ms} for each of `fns` ({name: callable}), each repetition flushed first
    and timed with events. --order=interleaved (the default) warms every system up, then runs
    repetition i of every system before repetition i + 1 of any, rotating which goes first: each
    system is timed over the same stretch of the run, after the same mix of work. That removes
    what the order costs (a copy timed after torch.compile's kernels measured ~4% faster than the
    same copy timed before them, docs/notes/benchmarking.md), and a system whose Python call
    costs more host time than its kernel takes GPU time is not timed on an idle GPU: the other
    systems' work keeps the queue ahead of the host. --order=sequential times the systems one
    after another, each after its own warm-up."""
    synced = arg("timing", "queued") == "synced"
    names = list(fns)
    events = {n: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(reps)] for n in names}

    def timed(name, i):
        start, stop = events[name][i]
        flush_l2()
        start.record()
        fns[name]()
        stop.record()
        if synced:  # bench_softmax --timing=synced: wait for each repetition before the next
            stop.synchronize()

    if arg("order", "interleaved") == "interleaved":
        for n in names:
            warm_up(fns[n])
        for i in range(reps):
            for k in range(len(names)):
                timed(names[(i + k) % len(names)], i)
    else:
        for n in names:
            warm_up(fns[n])
            for i in range(reps):
                timed(n, i)
    torch.cuda.synchronize()
    medians = {}
    for n in names:
        ms = sorted(s.elapsed_time(e) for s, e in events[n])
        medians[n] = ms[len(ms) // 2]
    return medians


def time_ms(fn, reps):
    return time_all({"one": fn}, reps)["one"]


def arg(name, default):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# |got - ref| <= atol + rtol * |ref|, as bench_softmax checks tritium.
TOLERANCE = {"fp32": (1e-5, 1e-5), "fp16": (2e-5, 1.5e-3), "bf16": (2e-5, 1e-2)}
LONG_NS = [32768, 65536, 131072, 262144]


def max_error(out, ref, atol, rtol):
    """(largest |out - ref|, whether every element is within atol + rtol * |ref|), in row
    chunks so that the float64 temporaries stay small for the 1 GiB --long tensors."""
    worst, ok = 0.0, True
    step = max(1, (1 << 26) // ref.shape[1])
    for r in range(0, ref.shape[0], step):
        d = (out[r:r + step].double() - ref[r:r + step]).abs().nan_to_num(nan=math.inf)
        worst = max(worst, d.max().item())
        ok = ok and bool((d <= atol + rtol * ref[r:r + step].abs()).all().item())
    return worst, ok


def softmax_backward_reference(o, g):
    """dx in float64 from the stored o and dout, in row chunks."""
    out = torch.empty(o.shape, dtype=torch.float64, device=o.device)
    step = max(1, (1 << 26) // o.shape[1])
    for r in range(0, o.shape[0], step):
        od, gd = o[r:r + step].double(), g[r:r + step].double()
        out[r:r + step] = od * (gd - (od * gd).sum(-1, keepdim=True))
    return out


def tritium_candidates(tritium, rows, n, dname, direction, x, g, y, ref, atol, rtol):
    """{"tritium:PLAN": launch} for each exported tritium kernel of this shape that gives the
    right answer (output poisoned with NaN before its checked run), and the error text
    ("wrong(max error)") when one was exported but none is right, else ""."""
    out = y  # the buffer the copy and Triton write: only the operation differs
    args = ([out, x, g, out.stride(0), x.stride(0), g.stride(0), rows, n] if g is not None
            else [out, x, x.stride(0), out.stride(0), rows, n])
    found, wrong = {}, ""
    for plan, launch in tritium.launchers(rows, n, dname, direction, args):
        out.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        err, ok = max_error(out, ref, atol, rtol)
        if ok:
            found["tritium:" + plan] = launch
        else:
            wrong = f"wrong({err:.1e})"
    return found, wrong


def main():
    if "--compile-time" in sys.argv:
        x = torch.randn(64, 1000, device="cuda")
        y = torch.empty_like(x)
        t0 = time.perf_counter()
        triton_softmax(x, y)
        torch.cuda.synchronize()
        print(f"triton first_call_ms {(time.perf_counter() - t0) * 1e3:.1f}")
        return
    if arg("timing", "queued") not in ("queued", "synced"):
        sys.exit(f"peers_softmax: --timing must be queued or synced, got '{arg('timing', '')}'")
    if arg("order", "interleaved") not in ("sequential", "interleaved"):
        sys.exit("peers_softmax: --order must be sequential or interleaved, got "
                 f"'{arg('order', '')}'")
    dname = arg("dtype", "fp32")
    if dname not in DTYPES:
        sys.exit(f"peers_softmax: --dtype must be fp32, fp16 or bf16, got '{dname}'")
    dtype, backward, long_rows = DTYPES[dname], "--backward" in sys.argv, "--long" in sys.argv
    direction = "backward" if backward else "forward"
    atol, rtol = TOLERANCE[dname]
    esize = torch.tensor([], dtype=dtype).element_size()
    reps = int(arg("reps", 100))
    if arg("n", ""):
        ns = [int(n) for n in arg("n", "").split(",")]
    elif long_rows:
        ns = LONG_NS
    elif "--quick" in sys.argv:
        ns = [256, 512, 1024, 2048, 4096, 8192, 12288, 16384]
    else:
        ns = list(range(256, 16385, 128))

    def rows_for(n):  # as bench_softmax: --rows, else 4096, else (--long) a 1 GiB input
        if arg("rows", ""):
            return int(arg("rows", ""))
        return math.ceil(2**30 / (n * esize)) if long_rows else 4096

    if backward:
        compiled = torch.compile(lambda o, g: o * (g - (o * g).sum(-1, keepdim=True)))
    else:
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
    tritium = TritiumKernels(arg("tritium", "")) if arg("tritium", "") else None
    print("M,N,triton_GBps,torch_GBps,torch_compile_GBps,copy_GBps,dtype,direction,"
          "copy_first_GBps"
          + (",tritium_GBps,tritium_plan" if tritium else ""), flush=True)
    for n in ns:
        rows = rows_for(n)
        if backward:
            # o: a softmax-like positive row (mean 1/N); dout: random.
            x = (torch.rand(rows, n, device="cuda") * (2.0 / n)).to(dtype)
            g = (torch.randn(rows, n, device="cuda") * 2).to(dtype)
            ref = softmax_backward_reference(x, g)
            y = torch.empty_like(x)
            systems = (
                ("triton", lambda: triton_softmax_backward(x, g, y) or y),
                ("torch", lambda: torch.ops.aten._softmax_backward_data(g, x, -1, dtype)),
                ("compile", lambda: compiled(x, g)))
        else:
            x = (torch.randn(rows, n, device="cuda") * 2).to(dtype)
            ref = torch.softmax(x.double(), -1)
            y = torch.empty_like(x)
            systems = (("triton", lambda: triton_softmax(x, y) or y),
                       ("torch", lambda: torch.softmax(x, -1)),
                       ("compile", lambda: compiled(x)))
        nbytes = x.numel() * esize
        gb = (3 if backward else 2) * nbytes / 1e9
        row = [rows, n]
        # The same copy timed before the systems too (column copy_first_GBps): a check on how
        # much the copy's figure depends on what ran before it.
        copy_first = 2 * nbytes / 1e9 / (time_ms(lambda: y.copy_(x), reps) * 1e-3)
        cells, timed = {}, {}
        for name, fn in systems:
            try:
                out = fn()
                torch.cuda.synchronize()
                err, ok = max_error(out, ref, atol, rtol)
                del out
                if ok:
                    timed[name] = fn
                else:
                    cells[name] = f"wrong({err:.1e})"
            except Exception as e:  # Triton runs out of resources for long rows
                why = (str(e).strip().splitlines() or [""])[0]
                print(f"peers_softmax: {name} {dname} {direction} M={rows} N={n} failed: "
                      f"{type(e).__name__}: {why}", file=sys.stderr, flush=True)
                cells[name] = ""
        # The copy of one tensor (M*N*bytes read and written): 2*M*N*bytes moved. For backward
        # this is the same copy bandwidth the kernel's 3*M*N*bytes/time is compared against.
        timed["copy"] = lambda: y.copy_(x)
        tritium_wrong = ""
        if tritium:
            found, tritium_wrong = tritium_candidates(tritium, rows, n, dname, direction, x,
                                                      g if backward else None, y, ref, atol, rtol)
            timed.update(found)
        medians = time_all(timed, reps)
        for name, ms in medians.items():
            moved = 2 * nbytes if name == "copy" else gb * 1e9
            cells[name] = f"{moved / 1e9 / (ms * 1e-3):.1f}"
        row += [cells[name] for name, _ in systems]
        row += [cells["copy"], dname, direction, f"{copy_first:.1f}"]
        if tritium:
            plans = [(float(cells[k]), k.split(":", 1)[1]) for k in medians if
                     k.startswith("tritium:")]
            for g_s, plan in plans:
                print(f"tritium M={rows} N={n} {dname} {direction} {plan}: {g_s:.1f} GB/s",
                      file=sys.stderr, flush=True)
            row += [f"{max(plans)[0]:.1f}", max(plans)[1]] if plans else [tritium_wrong, ""]
        print(",".join(str(v) for v in row), flush=True)
        del x, y, ref, systems
        if backward:
            del g
        torch.cuda.empty_cache()  # the --long tensors are 1 GiB each: free before the next N
    if backward or dname != "fp32":
        return  # host time per call: the tiny fp32 forward only, as bench_softmax measures it
    x = torch.randn(1, 128, device="cuda")
    y = torch.empty_like(x)
    for name, fn in (("triton", lambda: triton_softmax(x, y)),
                     ("torch", lambda: torch.softmax(x, -1))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5000):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        print(f"# {name} host_us_per_call {(t1 - t0) / 5000 * 1e6:.2f}", flush=True)


if __name__ == "__main__":
    main()
