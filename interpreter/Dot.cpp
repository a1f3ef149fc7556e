// The interpreter's dot: acc + a x b (a x b where its accumulate operand, foldAccumulatorResets's
// flag, is false) over row-major blocks, batch by batch. The operands are already rounded to
// their dtype (tf32 operands are rounded once more, to nearest with ties away from zero, as
// cvt.rna.tf32.f32 does on the GPU); the products are summed exactly in double (integers in 64
// bits) and rounded (or wrapped) to the accumulator's type once. The tensor cores sum in fp32
// with their own order, so the GPU differs from this by rounding only.
#include "interpreter/Evaluator.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace tritium::interpreter {

namespace {

double roundToTf32(double x) {
  float f = float(x);
  if (!std::isfinite(f))
    return f;
  uint32_t u = std::bit_cast<uint32_t>(f);
  u = (u + 0x1000u) & 0xffffe000u; // 13 low bits dropped, ties away from zero
  return double(std::bit_cast<float>(u));
}

} // namespace

bool evaluateDot(Machine &m, const ir::Op &op) {
  const ir::Type &ta = op.operand(0)->type(), &tb = op.operand(1)->type();
  const ir::Type &tc = op.result()->type();
  int r = ta.rank();
  int64_t batches = r == 3 ? ta.shape()[0] : 1;
  int64_t M = ta.shape()[size_t(r - 2)], K = ta.shape()[size_t(r - 1)];
  int64_t N = tb.shape()[size_t(r - 1)];
  const Tensor &a = m.at(op.operand(0)), &b = m.at(op.operand(1));
  // A false `accumulate` operand (foldAccumulatorResets) makes the product start from zeros.
  Tensor zeros;
  bool accumulate = op.numOperands() < 4 || m.at(op.operand(3)).i[0] != 0;
  if (!accumulate) {
    zeros.f.assign(size_t(batches * M * N), 0.0);
    zeros.i.assign(size_t(batches * M * N), 0);
  }
  const Tensor &c = accumulate ? m.at(op.operand(2)) : zeros;
  // out[s, i, j] = finish(c[s, i, j] + the sum over k of x[s, i, k] y[s, k, j])
  auto product = [&](const auto &x, const auto &y, const auto &c, auto &out, auto finish) {
    out.resize(size_t(batches * M * N));
    for (int64_t s = 0; s < batches; ++s)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          auto sum = c[size_t((s * M + i) * N + j)];
          for (int64_t k = 0; k < K; ++k)
            sum += x[size_t((s * M + i) * K + k)] * y[size_t((s * K + k) * N + j)];
          out[size_t((s * M + i) * N + j)] = finish(sum);
        }
  };
  Tensor out;
  if (tc.isFloat()) {
    bool tf32 = ta.kind() == ir::ScalarKind::F32 && op.hasAttr("input_precision") &&
                op.strAttr("input_precision") == "tf32";
    std::vector<double> x = a.f, y = b.f;
    if (tf32) {
      for (double &v : x)
        v = roundToTf32(v);
      for (double &v : y)
        v = roundToTf32(v);
    }
    product(x, y, c.f, out.f, [&](double v) { return roundTo(tc.kind(), v); });
  } else {
    product(a.i, b.i, c.i, out.i, [&](int64_t v) { return wrapTo(tc.kind(), v); });
  }
  m.at(op.result()) = std::move(out);
  return true;
}

} // namespace tritium::interpreter
