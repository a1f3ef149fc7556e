"""GPU-free tests of tools/bench_attention.py: its FLOP counts and its table read back from a
CSV (--from-csv). Needs neither torch nor triton. Run by ctest (tests/CMakeLists.txt), or
directly: python3 tests/python/test_bench_attention.py"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench_attention as ba  # noqa: E402

HEADER = "kernel,shape,causal,system,ms,TFLOPs,status,GBps\n"


def table(text):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("# a comment line\n" + HEADER + text)
    try:
        return ba.table(ba.read_csv(f.name))
    finally:
        os.unlink(f.name)


class FlopsTest(unittest.TestCase):
    def test_causal_halves_and_the_backward_counts_two_and_a_half(self):
        self.assertEqual(ba.flops("forward", 4, 32, 4096, 128, False), 4 * 4 * 32 * 4096 ** 2 * 128)
        self.assertEqual(ba.flops("forward", 4, 32, 4096, 128, True), 2 * 4 * 32 * 4096 ** 2 * 128)
        self.assertEqual(ba.flops("backward", 1, 1, 2, 4, False), 2.5 * 4 * 4 * 4)

    def test_varlen_counts_each_sequence(self):
        self.assertEqual(ba.varlen_lengths(4, 4096), [3075, 5117, 3075, 5117])
        self.assertEqual(ba.varlen_lengths(3, 64), [51, 77, 64])
        self.assertEqual(ba.flops("fp8_varlen", 2, 1, 4096, 1, True),
                         2 * (3075 ** 2 + 5117 ** 2))
        self.assertEqual(ba.flops("backward_varlen", 2, 1, 4096, 1, False),
                         2.5 * 4 * (3075 ** 2 + 5117 ** 2))


class TableTest(unittest.TestCase):
    def test_forward_is_judged_against_sdpa(self):
        lines = table("forward,4x32x4096x128,0,tritium,1,600,ok\n"
                      "forward,4x32x4096x128,0,sdpa,1,590,ok\n"
                      "forward,4x32x4096x128,1,tritium,1,700,ok\n"
                      "forward,4x32x4096x128,1,sdpa,1,600,ok\n")
        self.assertIn("| forward | 4 x 32 x 4096 x 128 | no | 600 | SDPA | 590 | 1.02 | not met (1.1 x) |",
                      lines[2])
        self.assertIn("| yes | 700 | SDPA | 600 | 1.17 | met (1.1 x) |", lines[3])
        self.assertEqual(lines[-1], "targets met at 1 of 2 rows")

    def test_fp8_is_judged_against_our_bf16(self):
        lines = table("fp8,4x32x4096x128,0,tritium,1,830,ok\n"
                      "fp8,4x32x4096x128,0,tritium_bf16,1,512,ok\n"
                      "fp8,4x32x4096x128,0,sdpa,1,590,ok\n")
        self.assertIn("| tritium bf16 | 512 | 1.62 | met (1.6 x) |", lines[2])

    def test_fp8_varlen_is_judged_against_our_bf16_varlen(self):
        lines = table("fp8_varlen,4x32x4096x128,0,tritium,1,700,ok\n"
                      "fp8_varlen,4x32x4096x128,0,tritium_fp8_staged,1,200,ok\n"
                      "fp8_varlen,4x32x4096x128,0,tritium_bf16,1,500,ok\n")
        self.assertIn("| fp8_varlen | 4 x 32 x 4096 x 128 | no | 700 | tritium bf16 | 500 | 1.40 |",
                      lines[2])

    def test_a_wrong_result_meets_nothing(self):
        lines = table("backward,4x32x4096x64,0,tritium,wrong,,wrong\n"
                      "backward,4x32x4096x64,0,sdpa,1,440,ok\n")
        self.assertIn("| wrong | SDPA | 440 | - | not met (1.1 x) |", lines[2])

    def test_decode_is_judged_by_gb_per_s_against_the_copy(self):
        lines = table("decode,8x32768p16,0,tritium,1,,ok,3400\n"
                      "decode,8x32768p16,0,copy,1,,ok,4000\n")
        self.assertIn("| decode | 8 x 32768p16 | no | 3400 | copy | 4000 | 0.85 | met (0.85 x) |",
                      lines[2])

    def test_decode_bytes_and_shape_names(self):
        self.assertEqual(ba.decode_bytes(1, 4096, 0, 128), 2 * 4096 * 8 * 128 * 2)
        self.assertEqual(ba.decode_bytes(1, 4096, 16, 256), 2 * 4096 * 8 * 256 * 2)
        self.assertEqual(ba.shape_text("decode", (8, 32768, 16, 128)), "8x32768p16")
        self.assertEqual(ba.shape_text("decode", (1, 4096, 0, 128)), "1x4096")
        self.assertEqual(ba.shape_text("decode", (8, 32768, 0, 256)), "8x32768x256")
        self.assertEqual(ba.shape_text("forward", (4, 32, 4096, 128)), "4x32x4096x128")

    def test_from_csv_prints_the_table(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(HEADER + "forward,1x32x16384x128,0,tritium,1,630,ok\n"
                    "forward,1x32x16384x128,0,sdpa,1,570,ok\n")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                self.assertEqual(ba.main(["--from-csv", f.name]), 0)
        finally:
            os.unlink(f.name)
        self.assertIn("| 1.11 | met (1.1 x) |", out.getvalue())


if __name__ == "__main__":
    unittest.main()
