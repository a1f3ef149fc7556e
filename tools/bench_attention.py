"""tritium's attention beside torch SDPA, all timed in one process on the GPU.

Kernels, each at Z x H x S x D shapes, plain and causal (bf16; K and V with as many heads as Q):
  forward     tritium_attention_forward against torch.nn.functional.scaled_dot_product_attention
              (its default backends: FlashAttention-2 or cuDNN on Hopper);
  forward_bshd  the same with Q, K, V and O laid out [Z, S, H, D] (FlashAttention's layout:
              strides given to tritium, transposed views to SDPA), and tritium on the same
              layout with a spare position after each sequence (tritium_pointers: strides
              that are not dense, so K and V are read through pointers, not TMA);
  forward_varlen  tritium_attention_forward_varlen_total_kv (K and V through TMA) on Z packed
              sequences of S +- (S / 4 - 3) keys in turns, against SDPA called on each
              sequence in turn; tritium_attention_forward_varlen (no total_kv: K and V through
              pointers) beside it as tritium_pointers;
  backward_bshd  the same on [Z, S, H, D] tensors, and through pointers as forward_bshd's;
  backward    tritium_attention_backward from tritium's own forward's O and log-sum-exp, against
              torch.autograd.grad of SDPA (dQ, dK and dV);
  backward_varlen  the same on forward_varlen's packed sequences (cu_seqlens, O and the
              log-sum-exp from tritium_attention_forward_varlen_total_kv):
              tritium_attention_backward_total_kv against torch.autograd.grad of SDPA on each
              sequence in turn, and tritium_attention_backward (no total_kv: dQ reads K and V
              through pointers) as tritium_no_total_kv;
  fp8         tritium_attention_forward_fp8 (e4m3 Q, K and V with descales of 1, V stored
              transposed) against tritium's bf16 forward on the same values, the issue's fp8
              target being 1.6 times it;
  fp8_varlen  tritium_attention_forward_varlen_fp8 (V as stored, transposed into the workspace
              first) on Z packed sequences of S +- (S / 4 - 3) keys in turns (mean S, none a
              multiple of 16) against tritium_attention_forward_varlen_total_kv in bf16 on
              the same values (K and V through descriptors; the fp8 target again), and
              without the workspace (V transposed through shared memory at every step:
              tritium_fp8_staged);
  decode      tritium_attention_decode (one query token per sequence, 32 query heads on 8 KV
              heads, head_dim 128 and 256; a contiguous cache and one of pages of 16 in
              shuffled order) against a device-to-device copy of the cache's bytes: shapes
              Z x S [x D], sequences x cached positions.
Operands are torch.randn in bf16 (fp8: the same values cast to e4m3). Each system runs once
before it is timed and its outputs are compared with SDPA's in fp32 on the same operands: the
largest difference must stay within 2% (fp8: 8%, against SDPA on the e4m3 values) of the
largest |reference| element; the outputs are poisoned with NaN first. A result that is off says
`wrong`; a system that raises says `failed`. Timing: triton.testing.do_bench(fn, warmup=25,
rep=200, return_mode="median"), L2 cleared before every repetition. TFLOP/s = 4 Z H S^2 D
(halved when causal), times 2.5 for the backward, as FlashAttention counts them.

Targets (the attention issue's, judged in the table): forward and backward at least 1.1 x
SDPA; fp8 at least 1.6 x tritium's bf16 forward; decode reading the cache at 0.85 of the copy
or better (GB/s = the cache's bytes / time; the copy's counts bytes read and written).

Output: a progress line per measurement on stderr; CSV (kernel,shape,causal,system,ms,TFLOPs,
status) on stdout or into -o FILE; then the table (to stdout with -o, else to stderr).

usage: python3 tools/bench_attention.py [forward] [forward_bshd] [forward_varlen] [backward]
           [backward_bshd] [backward_varlen] [fp8] [fp8_varlen] [decode]
           [--shapes=ZxHxSxD,...] [--reps=MS]
           [--warmup=MS] [--lib=DIR] [-o FILE]
       python3 tools/bench_attention.py --from-csv=FILE   (the table only; needs no GPU)
Run from the repository root on the GPU machine (docs/BENCHMARKS.md).
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_kernels as bk  # noqa: E402  (the ctypes binding; torch and triton where present)

say, read_csv = bk.say, bk.read_csv  # progress on stderr; a CSV's rows
torch, triton = bk.torch, bk.triton

KERNELS = ("forward", "forward_bshd", "forward_varlen", "backward", "backward_bshd",
           "backward_varlen", "fp8", "fp8_varlen", "decode")
CSV_COLUMNS = ("kernel", "shape", "causal", "system", "ms", "TFLOPs", "status", "GBps")
SHAPES = {"forward": ((4, 32, 4096, 64), (4, 32, 4096, 128), (4, 32, 4096, 256),
                      (16, 16, 1024, 64), (16, 16, 1024, 128), (1, 32, 16384, 128),
                      (4, 32, 4096, 96)),  # 96: padded to 128
          "forward_bshd": ((4, 32, 4096, 64), (4, 32, 4096, 128), (16, 16, 1024, 128)),
          "forward_varlen": ((4, 32, 4096, 128), (16, 16, 1024, 128)),
          "backward_varlen": ((4, 32, 4096, 64), (4, 32, 4096, 128), (4, 32, 4096, 256)),
          "backward": ((4, 32, 4096, 64), (4, 32, 4096, 128), (4, 32, 4096, 256),
                       (4, 32, 4096, 96)),
          "backward_bshd": ((4, 32, 4096, 64), (4, 32, 4096, 128), (4, 32, 4096, 256)),
          "fp8": ((4, 32, 4096, 64), (4, 32, 4096, 128), (4, 32, 4096, 256)),
          "fp8_varlen": ((4, 32, 4096, 128),),
          # (sequences, cached positions, page size (0: contiguous), head_dim)
          "decode": ((1, 4096, 0, 128), (1, 4096, 16, 128), (1, 131072, 0, 128),
                     (1, 131072, 16, 128), (8, 32768, 0, 128), (8, 32768, 16, 128),
                     (64, 4096, 0, 128), (64, 4096, 16, 128), (8, 32768, 0, 256),
                     (8, 32768, 16, 256))}
TOLERANCE = {"forward": 0.02, "forward_bshd": 0.02, "forward_varlen": 0.02, "backward": 0.02,
             "backward_bshd": 0.02, "backward_varlen": 0.02, "fp8": 0.08, "fp8_varlen": 0.08,
             "decode": 0.02}
TARGET = {"forward": ("sdpa", 1.1), "forward_bshd": ("sdpa", 1.1), "forward_varlen": ("sdpa", 1.1),
          "backward": ("sdpa", 1.1), "backward_bshd": ("sdpa", 1.1),
          "backward_varlen": ("sdpa", 1.1), "fp8": ("tritium_bf16", 1.6),
          "fp8_varlen": ("tritium_bf16", 1.6), "decode": ("copy", 0.85)}
DECODE_HEADS, DECODE_KV_HEADS = 32, 8
BF16 = 2  # the C interface's dtype code


def varlen_lengths(Z, S):
    """fp8_varlen's sequence lengths: S - (S / 4 - 3) and S + (S / 4 - 3) in turns (S alone
    last when Z is odd)."""
    d = S // 4 - 3
    return [S if i == Z - 1 and Z % 2 else S - d if i % 2 == 0 else S + d for i in range(Z)]


def flops(kernel, Z, H, S, D, causal):
    lengths = varlen_lengths(Z, S) if kernel.endswith("_varlen") else [S] * Z
    f = sum(4 * H * n * n * D for n in lengths) / (2 if causal else 1)
    return 2.5 * f if kernel.startswith("backward") else f


class TritiumAttention(bk.Tritium):
    SIGNATURES = dict(bk.Tritium.SIGNATURES)
    # dtype, o, lse, q, k, v, batch, heads, kv_heads, seq_q, seq_kv, head_dim, 4 stride arrays,
    # causal, scale, stream
    SIGNATURES["tritium_attention_forward"] = "i" + "p" * 5 + "l" * 6 + "p" * 4 + "if" + "p"
    # o, lse, q, k, v, the same six sizes, 4 stride arrays, v_transposed, causal, scale,
    # descale_q, descale_k, descale_v, stream
    SIGNATURES["tritium_attention_forward_fp8"] = "p" * 5 + "l" * 6 + "p" * 4 + "ii" + "f" * 4 + "p"
    # dtype, dq, dk, dv, q, k, v, o, dout, lse, cu_q, cu_kv, batch, heads, kv_heads, seq_q,
    # seq_kv, total_q, head_dim, 4 stride arrays, causal, window_left, window_right, scale,
    # workspace, workspace_bytes, stream
    SIGNATURES["tritium_attention_backward"] = ("i" + "p" * 11 + "l" * 7 + "p" * 4 + "i" + "ll" +
                                                "f" + "pl" + "p")
    # the same with total_kv after total_q
    SIGNATURES["tritium_attention_backward_total_kv"] = ("i" + "p" * 11 + "l" * 8 + "p" * 4 + "i" +
                                                         "ll" + "f" + "pl" + "p")
    # dtype, o, lse, q, k, v, seq_lens, block_table, page_size, max_pages, batch, heads,
    # kv_heads, seq_q, max_seq_kv, head_dim, 4 stride arrays, causal, scale, workspace,
    # workspace_bytes, stream
    SIGNATURES["tritium_attention_decode"] = "i" + "p" * 7 + "l" * 8 + "p" * 4 + "if" + "pl" + "p"
    # dtype, o, lse, q, k, v, cu_q, cu_kv, batch, heads, kv_heads, total_q, max_seq_q,
    # max_seq_kv, head_dim, causal, window_left, window_right, scale, stream
    SIGNATURES["tritium_attention_forward_varlen"] = "i" + "p" * 7 + "l" * 7 + "ill" + "f" + "p"
    # the same with total_kv after total_q
    SIGNATURES["tritium_attention_forward_varlen_total_kv"] = ("i" + "p" * 7 + "l" * 8 + "ill" +
                                                               "f" + "p")
    # o, lse, q, k, v, cu_q, cu_kv, the same seven sizes, causal, window_left, window_right,
    # scale, descale_q, descale_k, descale_v, workspace, workspace_bytes, stream
    SIGNATURES["tritium_attention_forward_varlen_fp8"] = ("p" * 7 + "l" * 7 + "ill" + "f" * 4 +
                                                          "pl" + "p")

    def workspace(self, Z, H, S):
        return self.sized("tritium_attention_backward_workspace", Z, H, S, 0)

    def varlen_fp8_workspace(self, Z, H, S, D):
        return self.sized("tritium_attention_forward_varlen_fp8_workspace", Z, H, S, D)

    def decode_workspace(self, Z, S, D):
        return self.sized("tritium_attention_decode_workspace", Z, DECODE_HEADS, DECODE_KV_HEADS, 1,
                          S, D)

    def sized(self, name, *sizes):
        import ctypes
        fn = getattr(self.lib, name)
        fn.argtypes = [ctypes.c_int64] * len(sizes)
        fn.restype = ctypes.c_int64
        return int(fn(*sizes))


def check(kernel, got, ref):
    """None where every tensor of `got` is within the tolerance of `ref`'s, else why not."""
    for g, r in zip(got, ref):
        diff = (g.float() - r.float()).abs().max().item()
        scale = r.float().abs().max().item()
        if not diff <= TOLERANCE[kernel] * scale:  # also catches NaN
            return f"largest difference {diff:.4g} against largest |reference| {scale:.4g}"
    return None


class Bench:
    def __init__(self, opts, out):
        self.opts, self.out = opts, out
        self.writer = csv.writer(out, lineterminator="\n")
        self.rows = []
        self.tritium = TritiumAttention(opts.lib)

    def time(self, fn):
        return triton.testing.do_bench(fn, warmup=self.opts.warmup, rep=self.opts.reps,
                                       return_mode="median")

    def row(self, kernel, shape, causal, system, ms=None, status="ok"):
        text = shape_text(kernel, shape)
        if ms is None:
            r = dict(zip(CSV_COLUMNS, (kernel, text, int(causal), system, status, "", status, "")))
            say(f"{kernel:8} {text:>14} {'causal' if causal else '':6} {system:12} {status}")
        elif kernel == "decode":  # bandwidth: the cache's bytes (a copy moves them twice)
            gbps = decode_bytes(*shape) * (2 if system == "copy" else 1) / ms / 1e6
            r = dict(zip(CSV_COLUMNS, (kernel, text, int(causal), system, f"{ms:.5f}", "",
                                       status, f"{gbps:.1f}")))
            say(f"{kernel:8} {text:>14} {system:12} {ms:9.5f} ms {gbps:8.1f} GB/s")
        else:
            tf = flops(kernel, *shape, causal) / ms / 1e9
            r = dict(zip(CSV_COLUMNS, (kernel, text, int(causal), system, f"{ms:.5f}",
                                       f"{tf:.1f}", status, "")))
            say(f"{kernel:8} {text:>14} {'causal' if causal else '':6} {system:12} {ms:9.5f} ms "
                f"{tf:8.1f} TFLOP/s")
        self.rows.append(r)
        self.writer.writerow([r[c] for c in CSV_COLUMNS])
        self.out.flush()

    def measure(self, kernel, shape, causal, system, fn, outputs, ref):
        """Checks `fn` (writing `outputs`, or returning them), times it, and checks again."""
        try:
            for t in outputs:
                t.fill_(float("nan"))
            got = fn() or outputs
            torch.cuda.synchronize()
            why = check(kernel, got, ref)
            if why:
                say(f"WRONG {system} {kernel} {shape}: {why}")
                return self.row(kernel, shape, causal, system, status="wrong")
            ms = self.time(fn)
            why = check(kernel, fn() or outputs, ref)
            if why:
                say(f"WRONG {system} {kernel} {shape} after timing: {why}")
                return self.row(kernel, shape, causal, system, status="wrong")
            self.row(kernel, shape, causal, system, ms)
        except Exception as e:  # noqa: BLE001 - one system's failure leaves the others
            say(f"FAILED {system} {kernel} {shape}: {type(e).__name__}: {e}")
            self.row(kernel, shape, causal, system, status="failed")

    def forward_call(self, q, k, v, o, lse, causal, strides=None):
        """strides: a CPU int64 tensor of {batch, head, seq} for all four tensors (None: dense
        [Z, H, S, D])."""
        Z, H, S, D = q.shape
        return self.tritium.bind("tritium_attention_forward", BF16, o, lse, q, k, v, Z, H, H, S, S,
                                 D, strides, strides, strides, strides, int(causal), 0.0)

    def decode(self, shape):
        Z, S, page, D = shape
        torch.manual_seed(Z * 1000003 + S + page + D)
        KH, H = DECODE_KV_HEADS, DECODE_HEADS
        q = torch.randn(Z, 1, H, D, device="cuda", dtype=torch.bfloat16)
        o = torch.empty_like(q)
        if page:  # [pages, page, kv_heads, D], each sequence's pages in shuffled order
            pages = Z * S // page
            k, v = (torch.randn(pages, page, KH, D, device="cuda", dtype=torch.bfloat16)
                    for _ in range(2))
            table = torch.randperm(pages, device="cuda", dtype=torch.int64).to(torch.int32)
            table = table.view(Z, S // page)
            gather = lambda c: c[table.long()].reshape(Z, S, KH, D)  # noqa: E731
        else:  # [batch, seq, kv_heads, D]
            k, v = (torch.randn(Z, S, KH, D, device="cuda", dtype=torch.bfloat16)
                    for _ in range(2))
            table = None
            gather = lambda c: c  # noqa: E731
        # The reference: SDPA in fp32 on each query head's KV head, [Z, 1, H, D].
        kf, vf = (gather(c).float().permute(0, 2, 1, 3).repeat_interleave(H // KH, dim=1)
                  for c in (k, v))
        ref = (torch.nn.functional.scaled_dot_product_attention(
            q.float().permute(0, 2, 1, 3), kf, vf).permute(0, 2, 1, 3),)
        del kf, vf
        n = self.tritium.decode_workspace(Z, S, D)
        work = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
        ours = self.tritium.bind("tritium_attention_decode", BF16, o, None, q, k, v, None, table,
                                 page, S // page if page else 0, Z, H, KH, 1, S, D, None, None,
                                 None, None, 1, 0.0, work, n)
        self.measure("decode", shape, False, "tritium", ours, (o,), ref)
        src = torch.empty(decode_bytes(*shape), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        try:
            self.row("decode", shape, False, "copy", self.time(lambda: dst.copy_(src)))
        except Exception as e:  # noqa: BLE001
            say(f"FAILED copy decode {shape}: {type(e).__name__}: {e}")
            self.row("decode", shape, False, "copy", status="failed")
        del src, dst, k, v
        torch.cuda.empty_cache()

    def varlen_fp8(self, shape, causal):
        Z, H, S, D = shape
        lengths, total, longest, cu = packed_batch(shape, 7)
        q8, k8, v8 = (torch.randn(total, H, D, device="cuda", dtype=torch.bfloat16)
                      .to(torch.float8_e4m3fn) for _ in range(3))
        qb, kb, vb = (t.to(torch.bfloat16) for t in (q8, k8, v8))  # the same values in bf16
        ref = torch.empty(total, H, D, device="cuda", dtype=torch.float32)
        for a, n in zip(cu.tolist(), lengths):  # each sequence alone, [1, H, n, D] in fp32
            part = (t[a:a + n].float().transpose(0, 1)[None] for t in (qb, kb, vb))
            ref[a:a + n] = torch.nn.functional.scaled_dot_product_attention(
                *part, is_causal=causal)[0].transpose(0, 1)
        ref = (ref,)
        o = torch.empty(total, H, D, device="cuda", dtype=torch.bfloat16)
        n = self.tritium.varlen_fp8_workspace(Z, H, longest, D)
        work = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
        fp8 = lambda w, wn: self.tritium.bind(  # noqa: E731
            "tritium_attention_forward_varlen_fp8", o, None, q8, k8, v8, cu, cu, Z, H, H, total,
            longest, longest, D, int(causal), -1, -1, 0.0, 1.0, 1.0, 1.0, w, wn)
        self.measure("fp8_varlen", shape, causal, "tritium", fp8(work, n), (o,), ref)
        self.measure("fp8_varlen", shape, causal, "tritium_fp8_staged", fp8(None, 0), (o,), ref)
        ob = torch.empty_like(o)
        # (bf16 at its fastest: K and V through descriptors, the call giving total_kv)
        self.measure("fp8_varlen", shape, causal, "tritium_bf16", self.tritium.bind(
            "tritium_attention_forward_varlen_total_kv", BF16, ob, None, qb, kb, vb, cu, cu, Z, H,
            H, total, total, longest, longest, D, int(causal), -1, -1, 0.0), (ob,), ref)
        del q8, k8, v8, qb, kb, vb, work
        torch.cuda.empty_cache()

    def varlen_bf16(self, shape, causal):
        Z, H, S, D = shape
        lengths, total, longest, cu = packed_batch(shape, 11)
        q, k, v = (torch.randn(total, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        # Each sequence as SDPA's [1, H, n, D] (views of the packed tensors).
        parts = [tuple(t[a:a + n].transpose(0, 1)[None] for t in (q, k, v))
                 for a, n in zip(cu.tolist(), lengths)]
        each = tuple(sdpa(*(t.float() for t in p), is_causal=causal)[0].transpose(0, 1)
                     for p in parts)  # [n, H, D] each
        ref = (torch.cat(each),)
        o = torch.empty(total, H, D, device="cuda", dtype=torch.bfloat16)
        tma = self.tritium.bind("tritium_attention_forward_varlen_total_kv", BF16, o, None, q, k, v,
                                cu, cu, Z, H, H, total, total, longest, longest, D, int(causal),
                                -1, -1, 0.0)
        self.measure("forward_varlen", shape, causal, "tritium", tma, (o,), ref)
        pointers = self.tritium.bind("tritium_attention_forward_varlen", BF16, o, None, q, k, v,
                                     cu, cu, Z, H, H, total, longest, longest, D, int(causal), -1,
                                     -1, 0.0)
        self.measure("forward_varlen", shape, causal, "tritium_pointers", pointers, (o,), ref)
        self.measure("forward_varlen", shape, causal, "sdpa", lambda: tuple(
            sdpa(*p, is_causal=causal)[0].transpose(0, 1) for p in parts), (), each)
        del q, k, v, parts, each
        torch.cuda.empty_cache()

    def varlen_backward(self, shape, causal):
        Z, H, S, D = shape
        lengths, total, longest, cu = packed_batch(shape, 13)
        q, k, v, dout = (torch.randn(total, H, D, device="cuda", dtype=torch.bfloat16)
                         for _ in range(4))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        spans = list(zip(cu.tolist(), lengths))
        seq = lambda t, a, n: t[a:a + n].transpose(0, 1)[None]  # noqa: E731 - SDPA's [1, H, n, D]

        def per_sequence(dtype):  # each sequence's graph and dO, leaves in `dtype`
            parts = [[seq(t, a, n).to(dtype).detach().requires_grad_() for t in (q, k, v)]
                     for a, n in spans]
            outs = [sdpa(*p, is_causal=causal) for p in parts]
            return lambda: tuple(g for p, o_, (a, n) in zip(parts, outs, spans)
                                 for g in torch.autograd.grad(o_, p, seq(dout, a, n).to(dtype),
                                                              retain_graph=True))
        each = per_sequence(torch.float32)()  # dQ, dK, dV of each sequence in turn
        ref = tuple(torch.cat([g[0].transpose(0, 1) for g in each[i::3]]) for i in range(3))
        o = torch.empty(total, H, D, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(H, total, device="cuda", dtype=torch.float32)
        self.tritium.bind("tritium_attention_forward_varlen_total_kv", BF16, o, lse, q, k, v, cu,
                          cu, Z, H, H, total, total, longest, longest, D, int(causal), -1, -1,
                          0.0)()
        n = self.tritium.sized("tritium_attention_backward_workspace", Z, H, longest, total)
        work = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
        dq, dk, dv = (torch.empty_like(q) for _ in range(3))
        # (given total_kv, dQ reads K and V through descriptors: its fastest form)
        self.measure("backward_varlen", shape, causal, "tritium", self.tritium.bind(
            "tritium_attention_backward_total_kv", BF16, dq, dk, dv, q, k, v, o, dout, lse, cu, cu,
            Z, H, H, longest, longest, total, total, D, None, None, None, None, int(causal), -1,
            -1, 0.0, work, n), (dq, dk, dv), ref)
        self.measure("backward_varlen", shape, causal, "tritium_no_total_kv", self.tritium.bind(
            "tritium_attention_backward", BF16, dq, dk, dv, q, k, v, o, dout, lse, cu, cu, Z, H, H,
            longest, longest, total, D, None, None, None, None, int(causal), -1, -1, 0.0, work,
            n), (dq, dk, dv), ref)
        self.measure("backward_varlen", shape, causal, "sdpa", per_sequence(torch.bfloat16), (),
                     each)
        del q, k, v, dout, o, lse, work, dq, dk, dv, each
        torch.cuda.empty_cache()

    def case(self, kernel, shape, causal):
        if kernel == "backward_varlen":
            return self.varlen_backward(shape, causal)
        if kernel == "decode":
            return self.decode(shape) if not causal else None
        if kernel == "fp8_varlen":
            return self.varlen_fp8(shape, causal)
        if kernel == "forward_varlen":
            return self.varlen_bf16(shape, causal)
        Z, H, S, D = shape
        torch.manual_seed(Z * 1000003 + H * 1009 + S + D)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        q, k, v = (torch.randn(Z, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(Z, H, S, device="cuda", dtype=torch.float32)
        strides = None
        if kernel.endswith("_bshd"):  # [Z, S, H, D] in memory, seen as [Z, H, S, D]
            q, k, v, o = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v, o))
            strides = torch.tensor([S * H * D, D, H * D], dtype=torch.int64)
        if kernel in ("forward", "forward_bshd"):
            ref = (sdpa(q.float(), k.float(), v.float(), is_causal=causal),)
            self.measure(kernel, shape, causal, "tritium",
                         self.forward_call(q, k, v, o, lse, causal, strides), (o,), ref)
            if kernel == "forward_bshd":  # [Z, S + 1, H, D], the first S positions used
                (qp, kp, vp, op), padded = padded_copies(q, k, v, o)
                self.measure(kernel, shape, causal, "tritium_pointers",
                             self.forward_call(qp, kp, vp, op, lse, causal, padded), (op,), ref)
                del qp, kp, vp, op
            self.measure(kernel, shape, causal, "sdpa",
                         lambda: (sdpa(q, k, v, is_causal=causal),), (), ref)
        elif kernel in ("backward", "backward_bshd"):
            qr, kr, vr = (t.float().requires_grad_() for t in (q, k, v))
            dout = torch.randn_like(q)  # (laid out as q: torch keeps the strides)
            ref = torch.autograd.grad(sdpa(qr, kr, vr, is_causal=causal), (qr, kr, vr), dout.float())
            del qr, kr, vr
            n = self.tritium.workspace(Z, H, S)
            work = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")

            def backward(q, k, v, o, dout, strides):
                self.forward_call(q, k, v, o, lse, causal, strides)()
                # (dq as q, dk as k, dv as v: the same strides, padded ones too)
                dq, dk, dv = (torch.empty_strided(t.size(), t.stride(), dtype=t.dtype,
                                                  device=t.device) for t in (q, k, v))
                return (dq, dk, dv), self.tritium.bind(
                    "tritium_attention_backward", BF16, dq, dk, dv, q, k, v, o, dout, lse, None,
                    None, Z, H, H, S, S, 0, D, strides, strides, strides, strides, int(causal),
                    -1, -1, 0.0, work, n)
            grads, ours = backward(q, k, v, o, dout, strides)
            self.measure(kernel, shape, causal, "tritium", ours, grads, ref)
            if kernel == "backward_bshd":  # [Z, S + 1, H, D], the first S positions used
                padded, padded_strides = padded_copies(q, k, v, o, dout)
                grads, ours = backward(*padded, padded_strides)
                self.measure(kernel, shape, causal, "tritium_pointers", ours, grads, ref)
                del padded, grads
            qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
            os_ = sdpa(qs, ks, vs, is_causal=causal)
            self.measure(kernel, shape, causal, "sdpa", lambda: torch.autograd.grad(
                os_, (qs, ks, vs), dout, retain_graph=True), (), ref)
        else:  # fp8: e4m3 values; V stored transposed, [Z, H, D, S]
            q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q, k, v))
            vt8 = v8.transpose(2, 3).contiguous()
            qb, kb, vb = (t.to(torch.bfloat16) for t in (q8, k8, v8))  # the same values in bf16
            ref = (sdpa(qb.float(), kb.float(), vb.float(), is_causal=causal),)
            ours = self.tritium.bind("tritium_attention_forward_fp8", o, lse, q8, k8, vt8, Z, H, H,
                                     S, S, D, None, None, None, None, 1, int(causal), 0.0, 1.0,
                                     1.0, 1.0)
            self.measure(kernel, shape, causal, "tritium", ours, (o,), ref)
            ob = torch.empty_like(o)
            self.measure(kernel, shape, causal, "tritium_bf16",
                         self.forward_call(qb, kb, vb, ob, lse, causal), (ob,), ref)
            self.measure(kernel, shape, causal, "sdpa",
                         lambda: (sdpa(qb, kb, vb, is_causal=causal),), (), ref)
        torch.cuda.empty_cache()

    def run(self, kernels, shapes):
        props = torch.cuda.get_device_properties(0)
        print(f"# {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}, "
              f"triton {triton.__version__}; {self.tritium.path}", file=self.out)
        print(f"# do_bench(warmup={self.opts.warmup}, rep={self.opts.reps}, median), L2 cleared "
              "per repetition", file=self.out)
        self.writer.writerow(CSV_COLUMNS)
        for kernel in kernels:
            # --shapes (Z x H x S x D) names the forward, backward and fp8 shapes (fp8_varlen:
            # Z sequences of mean length S).
            for shape in (shapes if shapes and kernel != "decode" else SHAPES[kernel]):
                for causal in (False, True):
                    self.case(kernel, shape, causal)


def packed_batch(shape, seed):
    """A varlen batch of `shape`'s Z sequences (varlen_lengths), seeded: the lengths, their
    total and longest, and cu_seqlens on the GPU."""
    Z, H, S, D = shape
    torch.manual_seed(Z * 1000003 + H * 1009 + S + D + seed)
    lengths = varlen_lengths(Z, S)
    cu = torch.tensor([0] + lengths, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
    return lengths, sum(lengths), max(lengths), cu


def padded_copies(*tensors):
    """Copies of [Z, H, S, D] views in a [Z, S + 1, H, D] buffer (the first S positions used,
    so no descriptor covers them) and their {batch, head, seq} strides."""
    Z, H, S, D = tensors[0].shape
    copies = [torch.empty(Z, S + 1, H, D, device="cuda", dtype=torch.bfloat16)[:, :S]
              .transpose(1, 2) for _ in tensors]
    for dst, src in zip(copies, tensors):
        dst.copy_(src)
    return copies, torch.tensor([(S + 1) * H * D, D, H * D], dtype=torch.int64)


def decode_bytes(Z, S, page, D):
    """The K and V cache bytes a decode of Z sequences of S positions reads."""
    return 2 * Z * S * DECODE_KV_HEADS * D * 2


def shape_text(kernel, shape):
    if kernel == "decode":
        Z, S, page, D = shape
        return f"{Z}x{S}" + (f"p{page}" if page else "") + (f"x{D}" if D != 128 else "")
    return "x".join(str(v) for v in shape)


def table(rows):
    """The table's lines: per kernel, shape and mask, tritium against its target's peer
    (TFLOP/s; GB/s for decode)."""
    figures = {}
    for r in rows:
        key = (r["kernel"], r["shape"], r["causal"] in ("1", 1, True))
        figure = r.get("GBps") if r["kernel"] == "decode" else r["TFLOPs"]
        figures.setdefault(key, {})[r["system"]] = figure if r["status"] == "ok" else r["status"]
    lines = ["| kernel | shape | causal | tritium | peer | peer's | ratio | target |",
             "| --- | --- | --- | ---: | --- | ---: | ---: | --- |"]
    met = 0
    for (kernel, shape, causal), f in figures.items():
        peer, factor = TARGET[kernel]

        def number(name):
            try:
                return float(f.get(name, ""))
            except ValueError:
                return None
        ours, theirs = number("tritium"), number(peer)
        ratio = ours / theirs if ours and theirs else None
        ok = ratio is not None and ratio >= factor
        met += ok
        peer_name = {"tritium_bf16": "tritium bf16", "copy": "copy"}.get(peer, "SDPA")
        lines.append(f"| {kernel} | {shape.replace('x', ' x ')} | {'yes' if causal else 'no'} | "
                     f"{f.get('tritium', '-')} | {peer_name} | {f.get(peer, '-')} | "
                     f"{'-' if ratio is None else format(ratio, '.2f')} | "
                     f"{'met' if ok else 'not met'} ({factor:g} x) |")
    lines.append(f"targets met at {met} of {len(figures)} rows")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("kernels", nargs="*", help=f"of {', '.join(KERNELS)} (default: all)")
    p.add_argument("--shapes", default="",
                   help="ZxHxSxD,... for forward, backward, fp8 and fp8_varlen (default: each "
                   "kernel's)")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--lib", default="device-bundle")
    p.add_argument("-o", dest="output")
    p.add_argument("--from-csv")
    opts = p.parse_args(argv)
    if opts.from_csv:
        print("\n".join(table(read_csv(opts.from_csv))))
        return 0
    for k in opts.kernels:
        if k not in KERNELS:
            raise SystemExit(f"bench_attention: '{k}' is none of {', '.join(KERNELS)}")
    shapes = []
    for s in filter(None, opts.shapes.split(",")):
        try:
            Z, H, S, D = (int(v) for v in s.split("x"))
        except ValueError:
            raise SystemExit(f"bench_attention: --shapes: '{s}' is not ZxHxSxD")
        shapes.append((Z, H, S, D))
    if bk.MISSING is not None:
        raise SystemExit(f"bench_attention: torch and triton are needed to measure ({bk.MISSING})")
    out = open(opts.output, "w") if opts.output else sys.stdout
    bench = Bench(opts, out)
    bench.run(opts.kernels or list(KERNELS), shapes)
    print("\n".join(table(bench.rows)), file=sys.stdout if opts.output else sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
