// See AttentionArguments.h.
#include "kernels/AttentionArguments.h"

#include <algorithm>
#include <bit>
#include <string>

namespace tritium::kernels {

AttentionStrides attentionStrides(const Arguments &args, const AttentionStrides &given,
                                  int64_t heads, int64_t seq, int64_t headDim, bool varlen,
                                  const char *name) {
  AttentionStrides d = given;
  if (!d.batch && !d.head && !d.seq)
    d = varlen ? AttentionStrides{0, headDim, heads * headDim}
               : AttentionStrides{heads * seq * headDim, seq * headDim, headDim};
  if (varlen)
    d.batch = 0;
  if (d.seq < headDim && seq > 1)
    args.fail(std::string(name) + "'s sequence stride " + std::to_string(d.seq) +
              " is less than head_dim " + std::to_string(headDim));
  return d;
}

AttentionStrides transposedStrides(const Arguments &args, const AttentionStrides &given,
                                   int64_t heads, int64_t seq, int64_t headDim, const char *name) {
  AttentionStrides d = given;
  if (!d.batch && !d.head && !d.seq)
    d = AttentionStrides{heads * headDim * seq, headDim * seq, seq};
  if (d.seq < seq && headDim > 1)
    args.fail(std::string(name) + " is transposed ([batch, heads, head_dim, seq]): its row "
              "stride " + std::to_string(d.seq) + " is less than seq " + std::to_string(seq));
  return d;
}

bool denseStrides(const AttentionStrides &x, int64_t heads, int64_t seq, int64_t headDim) {
  return (!x.batch && !x.head && !x.seq) ||
         (x.batch == heads * seq * headDim && x.head == seq * headDim && x.seq == headDim);
}

bool seqMajorStrides(const AttentionStrides &x, int64_t heads, int64_t seq, int64_t headDim) {
  return x.batch == seq * heads * headDim && x.head == headDim && x.seq == heads * headDim;
}

bool denseTransposedStrides(const AttentionStrides &x, int64_t heads, int64_t seq,
                            int64_t headDim) {
  return (!x.batch && !x.head && !x.seq) ||
         (x.batch == heads * headDim * seq && x.head == headDim * seq && x.seq == seq);
}

bool packedStrides(const AttentionStrides &x, int64_t heads, int64_t headDim) {
  return (!x.batch && !x.head && !x.seq) || (x.head == headDim && x.seq == heads * headDim);
}

bool checkVarlen(const Arguments &args, const void *cuSeqlensQ, const void *cuSeqlensKV,
                 int64_t totalQ, int64_t seqQ) {
  bool varlen = cuSeqlensQ != nullptr;
  if (varlen != (cuSeqlensKV != nullptr))
    args.fail("cuSeqlensQ and cuSeqlensKV are given together (varlen) or not at all");
  if (varlen && totalQ < seqQ)
    args.fail("totalQ (" + std::to_string(totalQ) + ", the packed query rows) must be at "
              "least seq_q (" + std::to_string(seqQ) + ", the longest sequence)");
  return varlen;
}

WindowReach windowReach(int64_t windowLeft, int64_t windowRight, bool causal, int64_t unbounded) {
  auto reach = [&](int64_t w) { return w < 0 ? unbounded : std::min(w, unbounded); };
  return {reach(windowLeft), causal ? 0 : reach(windowRight)};
}

int64_t varlenTransposedValuesWidth(int64_t batch, int64_t seqKV) {
  // Sequence b's zeros end before 16 x (ceil(total / 16) + batch) + round16(its length) + 256
  // <= 16 x (ceil(batch x seqKV / 16) + batch + 1) + 256.
  return 16 * ((batch * seqKV + 15) / 16 + batch + 1) + 256;
}

void checkHeadDim(const Arguments &args, int64_t headDim) {
  if (headDim < 16 || headDim > 256 || headDim % 16 != 0)
    args.fail("head_dim must be a multiple of 16 from 16 to 256, got " + std::to_string(headDim));
}

int64_t paddedHeadDim(int64_t headDim) {
  return std::max<int64_t>(16, int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(headDim, 1)))));
}

} // namespace tritium::kernels
