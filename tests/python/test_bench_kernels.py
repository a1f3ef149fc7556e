"""GPU-free tests of tools/bench_kernels.py: the peer guard (anchors, the copy floor, the
scaling of H200 anchors to an H100) and reading a CSV back (--from-csv), old and new columns.
Needs neither torch nor triton. Run by ctest (tests/CMakeLists.txt), or directly:
    python3 tests/python/test_bench_kernels.py"""
import contextlib
import glob
import io
import os
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench_kernels as bk  # noqa: E402

# Made-up anchors: a Triton and a torch figure, a best-peer figure, and the H200 copy.
ANCHORS = {
    ("H200", "copy", "any", "peak", "copy"): (4000.0, "d0"),
    ("H200", "softmax_fwd", "fp32", "4096x1024", "triton"): (2000.0, "d1"),
    ("H200", "softmax_fwd", "fp32", "4096x1024", "torch"): (2200.0, "d1"),
    ("H200", "layernorm_bwd", "fp16", "4096x1024", "best"): (600.0, "d2"),
}


def guard(gpu, copy=4000.0):
    return bk.PeerGuard(gpu, copy, ANCHORS)


class PeerGuardTest(unittest.TestCase):
    def test_peer_far_below_its_anchor_is_refused(self):
        refused = guard("NVIDIA H200").judge("softmax_fwd", "fp32", "4096x1024",
                                             {"triton": "900", "torch": "2100", "copy": "2600"})
        self.assertEqual(set(refused), {"triton"})
        self.assertIn("under 0.5 x its reference figure 2000 GB/s", refused["triton"])

    def test_peer_near_its_anchor_is_kept(self):
        refused = guard("NVIDIA H200").judge("softmax_fwd", "fp32", "4096x1024",
                                             {"triton": "1100", "torch": "1200", "copy": "2600"})
        self.assertEqual(refused, {})

    def test_peer_under_a_tenth_of_the_copy_is_refused_without_an_anchor(self):
        refused = guard("NVIDIA H200").judge("softmax_fwd", "bf16", "4096x1024",
                                             {"triton": "13.2", "torch": "1208", "copy": "1802"})
        self.assertEqual(set(refused), {"triton"})
        self.assertIn("under 0.1 x the copy", refused["triton"])

    def test_both_reasons_are_given(self):
        refused = guard("NVIDIA H200").judge("softmax_fwd", "fp32", "4096x1024",
                                             {"triton": "31.3", "copy": "2615"})
        self.assertIn("copy", refused["triton"])
        self.assertIn("reference figure", refused["triton"])

    def test_tritium_the_copy_and_results_without_a_figure_are_not_judged(self):
        refused = guard("NVIDIA H200").judge(
            "softmax_fwd", "fp32", "4096x1024",
            {"tritium": "10", "triton": "wrong", "torch": "failed", "copy": "2600"})
        self.assertEqual(refused, {})

    def test_h200_anchors_are_scaled_by_the_copy_on_an_h100(self):
        h100 = guard("NVIDIA H100 80GB HBM3", copy=3000.0)  # 0.75 of the anchors' copy
        self.assertEqual(h100.family, "H200")
        self.assertAlmostEqual(h100.scale, 0.75)
        figures = {"triton": "800", "copy": "2000"}
        # 800 < 0.5 x 2000 on an H200, but not < 0.5 x 2000 x 0.75 on this H100.
        self.assertEqual(set(guard("NVIDIA H200").judge("softmax_fwd", "fp32", "4096x1024",
                                                        figures)), {"triton"})
        self.assertEqual(h100.judge("softmax_fwd", "fp32", "4096x1024", figures), {})
        self.assertEqual(set(h100.judge("softmax_fwd", "fp32", "4096x1024",
                                        {"triton": "700", "copy": "2000"})), {"triton"})

    def test_other_gpus_get_the_copy_floor_alone(self):
        for name in ("NVIDIA GH200 480GB", "NVIDIA A100-SXM4-80GB"):
            other = guard(name)
            self.assertIsNone(other.family, name)
            self.assertEqual(other.judge("softmax_fwd", "fp32", "4096x1024",
                                         {"triton": "900", "copy": "2600"}), {})
            self.assertEqual(set(other.judge("softmax_fwd", "fp32", "4096x1024",
                                             {"triton": "200", "copy": "2600"})), {"triton"})
        # An H100 whose copy bandwidth is unknown cannot scale the anchors either.
        self.assertIsNone(guard("NVIDIA H100 80GB HBM3", copy=None).family)

    def test_a_best_peer_anchor_judges_the_best_peer(self):
        kept = guard("NVIDIA H200").judge(
            "layernorm_bwd", "fp16", "4096x1024",
            {"triton": "250", "torch": "400", "torch_compile": "500", "copy": "2300"})
        self.assertEqual(kept, {})  # the best (500) is within half of 600; slower peers stay
        refused = guard("NVIDIA H200").judge(
            "layernorm_bwd", "fp16", "4096x1024",
            {"triton": "250", "torch": "260", "copy": "2300"})
        self.assertEqual(set(refused), {"triton", "torch"})
        self.assertIn("the best peer here (torch, 260.0 GB/s)", refused["triton"])

    def test_the_anchors_file_loads(self):
        anchors = bk.load_anchors()
        self.assertEqual(anchors[("H200", "copy", "any", "peak", "copy")][0], 4220.0)
        self.assertEqual(anchors[("H200", "softmax_fwd", "fp32", "4096x1024", "triton")][0],
                         2089.0)
        self.assertEqual(anchors[("H200", "rmsnorm_bwd", "bf16", "4096x32768", "best")][0],
                         1114.0)
        systems = {key[4] for key in anchors}
        self.assertLessEqual(systems, set(bk.PEERS) | {"best", "copy"})


HEADER = ("# NVIDIA H200, 132 SMs; torch 2.11.0, triton 3.6.0; lib\n"
          "# do_bench(warmup=25, rep=200, median), L2 cleared per repetition; GBps = bytes / time\n")


class FromCsvTest(unittest.TestCase):
    def table(self, text):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "kernels.csv")
            with open(path, "w") as f:
                f.write(text)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                self.assertEqual(bk.main([f"--from-csv={path}"]), 0)
        return printed.getvalue()

    def line_of(self, table, shape):
        return next(line for line in table.splitlines() if f" {shape} " in line)

    def test_an_old_csv_is_judged_when_read(self):
        table = self.table(HEADER + "kernel,dtype,shape,system,ms,GBps\n"
                           "softmax_fwd,fp32,4096x1024,tritium,0.01277,2628.0\n"
                           "softmax_fwd,fp32,4096x1024,triton,1.07341,31.3\n"
                           "softmax_fwd,fp32,4096x1024,torch,0.01462,2294.5\n"
                           "softmax_fwd,fp32,4096x1024,copy,0.01283,2614.9\n")
        line = self.line_of(table, "4096x1024")
        self.assertIn("torch", line)  # the best peer left
        self.assertIn("REFUSED: triton", line)
        self.assertIn("# REFUSED as a peer: triton softmax_fwd fp32 4096x1024: 31.3 GB/s", table)

    def test_a_csv_with_status_columns_keeps_its_verdicts(self):
        table = self.table(
            HEADER + f"# {bk.COPY_COMMENT} 4100.0 GB/s (256 MiB read, 256 MiB written)\n"
            "kernel,dtype,shape,system,ms,GBps,status,reason\n"
            "add,fp32,16777216,tritium,0.05,3800.0,ok,\n"
            "add,fp32,16777216,triton,0.05,3700.0,refused,\"marked when measured, with a comma\"\n"
            "add,fp32,16777216,torch,0.05,3600.0,ok,\n"
            "add,fp32,16777216,torch_compile,wrong,wrong,wrong,\n"
            "add,fp32,16777216,copy,0.05,3750.0,ok,\n")
        line = self.line_of(table, "16777216")
        self.assertIn("torch ", line)
        self.assertIn("3600", line)
        self.assertIn("REFUSED: triton", line)
        self.assertIn("marked when measured, with a comma", table)
        self.assertIn("not counted as a peer: torch_compile wrong", table)

    def test_the_recorded_h200_runs_refuse_the_old_softmax_peer(self):
        """The H200 runs kept in docs/perf, measured with the softmax peer's old launcher: its
        rows are refused, and no other Triton softmax, add, dropout or cross-entropy forward."""
        paths = sorted(glob.glob(os.path.join(ROOT, "docs", "perf", "kernels-*.csv")))
        checked = 0
        for path in paths:
            rows = bk.read_csv(path)
            guard = bk.read_guard(path, rows)
            if guard is None or guard.family != "H200" or guard.scale != 1.0:
                continue
            softmax = {(r["dtype"], r["shape"]) for r in rows
                       if r["kernel"] == "softmax_fwd" and r["system"] == "triton"}
            if not softmax:
                continue
            refused = bk.refusals(rows, guard)
            self.assertEqual({key[1:3] for key in refused if key[0] == "softmax_fwd"}, softmax,
                             path)
            self.assertEqual({key[3] for key in refused if key[0] == "softmax_fwd"}, {"triton"})
            self.assertFalse([key for key in refused
                              if key[0] in ("add", "dropout", "crossentropy_fwd")], path)
            checked += 1
        if not checked:
            self.skipTest("no H200 run with the softmax peer in docs/perf")

class FakeTensor:
    """Enough of a CUDA tensor for Bench.case's copy: copy_ returns the copy's time."""

    def __init__(self, numel):
        self.n = numel

    def numel(self):
        return self.n

    def copy_(self, other):
        return {"ms": 0.01}


class FakeTorch:
    uint8 = "uint8"
    cuda = types.SimpleNamespace(synchronize=lambda: None)

    @staticmethod
    def empty(numel, dtype=None, device=None):
        return FakeTensor(numel)

    @staticmethod
    def empty_like(tensor):
        return FakeTensor(tensor.numel())


class TimedBench(bk.Bench):
    """Bench with do_bench replaced: each system's function returns its time with its outputs."""

    def time(self, fn):
        return fn()["ms"]


class LiveCaseTest(unittest.TestCase):
    """Bench.case without a GPU: the guard's verdicts reach the rows, the CSV and the log."""

    def setUp(self):
        self.saved = bk.torch
        bk.torch = FakeTorch

    def tearDown(self):
        bk.torch = self.saved

    def test_a_slow_peer_is_written_refused(self):
        opts = bk.parse_args(["softmax", "--no-compile"])
        out = io.StringIO()
        bench = TimedBench(opts, out, systems=("triton", "torch", "copy"))
        bench.guard = guard("NVIDIA H200")
        bench.writer.writerow(bk.CSV_COLUMNS)
        moved = 2 * 4096 * 1024 * 4
        log = io.StringIO()
        with contextlib.redirect_stderr(log):
            bench.case("softmax_fwd", "fp32", "4096x1024", moved, [
                ("tritium", lambda: self.fail("tritium is not measured here")),
                ("triton", lambda: {"ms": 1.0}),  # 33.6 GB/s
                ("torch", lambda: {"ms": 0.015}),
                ("torch_compile", None),
            ], lambda system, outputs: [])
        rows = {r["system"]: r for r in bk.read_csv_text(out.getvalue())}
        self.assertEqual(set(rows), {"triton", "torch", "copy"})
        self.assertEqual(rows["triton"]["status"], "refused")
        self.assertEqual(rows["triton"]["GBps"], "33.6")
        self.assertIn("under 0.1 x the copy", rows["triton"]["reason"])
        self.assertEqual((rows["torch"]["status"], rows["torch"]["reason"]), ("ok", ""))
        self.assertIn("REFUSED softmax_fwd fp32 4096x1024 triton:", log.getvalue())
        table = "\n".join(bk.summary(bench.rows, bench.guard))
        self.assertIn("REFUSED: triton", table)


if __name__ == "__main__":
    unittest.main()
