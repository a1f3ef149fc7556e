"""GPU-free tests of tools/bench_matmul.py: the targets it judges each shape by and its table
read back from a CSV (--from-csv); and tools/bench_matmul_power.py's reading of nvidia-smi. Needs neither torch nor triton. Run by ctest
(tests/CMakeLists.txt), or directly: python3 tests/python/test_bench_matmul.py"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench_matmul as bm  # noqa: E402
import bench_matmul_power as power  # noqa: E402

HEADER = "kernel,dtype,shape,system,ms,TFLOPs,GBps,status\n"


def rows(text):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("# a comment line\n" + HEADER + text)
    try:
        return bm.read_csv(f.name)
    finally:
        os.unlink(f.name)


class TargetTest(unittest.TestCase):
    def test_the_issues_targets(self):
        self.assertEqual(bm.target("bf16", 4096, 4096, 4096), (("torch", 1.0), ("triton", 1.05)))
        self.assertEqual(bm.target("fp16", 8192, 8192, 512), (("torch", 1.0),))
        self.assertEqual(bm.target("bf16", 16, 8192, 8192), (("copy", 0.9),))
        self.assertEqual(bm.target("fp8e4m3", 8192, 8192, 8192), (("torch", 0.95),))

    def test_moved_bytes_count_c_in_bf16_for_fp8(self):
        self.assertEqual(bm.moved_bytes("bf16", 16, 8192, 8192), (16 + 8192) * 8192 * 2 + 16 * 8192 * 2)
        self.assertEqual(bm.moved_bytes("fp8e4m3", 2, 3, 4), (8 + 12) + 12)


class TableTest(unittest.TestCase):
    def table(self, text):
        return bm.table(rows(text))

    def test_met_needs_every_peer_of_the_target(self):
        lines = self.table("matmul,bf16,4096x4096x4096,tritium,1,760,1,ok\n"
                           "matmul,bf16,4096x4096x4096,torch,1,720,1,ok\n"
                           "matmul,bf16,4096x4096x4096,triton,1,740,1,ok\n")
        self.assertIn("| 1.06 | 1.03 |", lines[2])
        self.assertIn("not met (1 x cuBLAS, 1.05 x Triton)", lines[2])
        self.assertEqual(lines[-1], "targets met at 0 of 1 shapes")

    def test_a_wrong_peer_is_no_figure(self):
        lines = self.table("matmul,bf16,1024x1024x1024,tritium,1,500,1,ok\n"
                           "matmul,bf16,1024x1024x1024,torch,wrong,,,wrong\n")
        self.assertIn("| wrong |", lines[2])
        self.assertIn("not met", lines[2])

    def test_the_decode_shape_is_judged_against_the_copy(self):
        lines = self.table("matmul,bf16,16x8192x8192,tritium,1,40,3700,ok\n"
                           "matmul,bf16,16x8192x8192,torch,1,40,3700,ok\n"
                           "matmul,bf16,16x8192x8192,copy,1,45,4000,ok\n")
        self.assertIn("| 0.93 | met (0.9 x copy) |", lines[2])
        self.assertEqual(lines[-1], "targets met at 1 of 1 shapes")

    def test_from_csv_prints_the_table(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(HEADER + "matmul,fp8e4m3,4096x4096x4096,tritium,1,1263,1,ok\n"
                    "matmul,fp8e4m3,4096x4096x4096,torch,1,1240,1,ok\n")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                self.assertEqual(bm.main(["--from-csv", f.name]), 0)
        finally:
            os.unlink(f.name)
        self.assertIn("| fp8e4m3 | 4096 x 4096 x 4096 | 1263 | 1240 | - | 1.02 |", out.getvalue())
        self.assertIn("met (0.95 x cuBLAS)", out.getvalue())


class PowerSamplesTest(unittest.TestCase):
    """tools/bench_matmul_power.py reads nvidia-smi's CSV rows and skips what is not one."""

    def test_rows_and_what_is_not_one(self):
        text = ("2026/12/01 02:31:05.123, 681.20, 700.00, 1454, 3201, 0x0000000000000004, 60\n"
                "2026/12/01 02:31:05.173, [N/A], 700.00, 1454, 3201, 0x0, 60\n"
                "a line of something else\n")
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(text)
        try:
            got = power.samples(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0][1:], (681.2, 700.0, 1454.0, 3201.0, "0x0000000000000004", "60"))


if __name__ == "__main__":
    unittest.main()
