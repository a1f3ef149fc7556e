// Lowering of scan (an inclusive scan along one axis with a combine region; {reverse = 1} runs it
// from the last element to the first) in registers, under the operand's layout, as reductions
// are lowered. A line along the axis lies as reps x warps x lanes x runs (LayoutMap::spread):
//
// 1. each thread scans each of its runs in registers;
// 2. the lanes along the axis scan their runs' totals by shuffles (Hillis-Steele: log2(lanes)
//    steps of shfl.up), and one more shuffle gives each lane the total of the lanes before it;
// 3. each warp's total per rep (held by its last lane) reaches the other warps: through a
//    small shared buffer of [row][rep][warp] totals and one barrier when several warps lie along
//    the axis, else by shfl.idx from that lane. Each thread combines the totals of the chunks
//    (rep, warp) before its own;
// 4. every element gets the chunks' prefix, then the lanes' prefix, combined in before it.
//
// The combine region need not be commutative: it always takes the earlier elements (in scan
// order) first, and a prefix that does not exist (the first lane, the first chunk) is skipped
// by a select rather than replaced by an identity, which user regions do not have. Reverse
// scans are the same walk with lanes, warps, reps and runs taken from the other end (shfl.down).
// The shared buffer alternates between two banks with the reductions' (LowerReduction.cpp), so
// one barrier per scan suffices.
#include "compiler/codegen/Lowering.h"
#include "compiler/gpu/GpuPasses.h"

#include <map>
#include <optional>

namespace tritium::codegen {

namespace {

using Group = std::vector<llvm::Value *>; // one value per operand

// A group that holds only where `valid` is true (null: everywhere); none at all when empty.
struct Prefix {
  std::optional<Group> g;
  llvm::Value *valid = nullptr;
};

struct ScanLowering {
  Lowering &l;
  const ir::Op &op;
  size_t n;
  bool reverse;
  const ir::Value *in;
  ir::LayoutMap map;
  int d; // the axis, as a root dimension
  ir::LayoutMap::Spread sp;

  ScanLowering(Lowering &lw, const ir::Op &o)
      : l(lw), op(o), n(o.numOperands()), reverse(o.hasAttr("reverse") && o.intAttr("reverse")),
        in(o.operand(0)), map(*in->layout(), in->type().shape()),
        d(map.rootDim(int(o.intAttr("axis")))), sp(map.spread(d)) {
    if (!map.spreadsExactly(d))
      internalError("scan along a layout that does not cover its axis evenly: " +
                    in->layout()->str());
  }

  Group combine(const Group &earlier, const Group &later) {
    const ir::Block &region = *op.region(0);
    for (size_t i = 0; i < n; ++i) {
      l.set(region.argument(unsigned(i)), {earlier[i]});
      l.set(region.argument(unsigned(i + n)), {later[i]});
    }
    const ir::Op *yield = l.lowerRegion(region);
    Group out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(l.get(yield->operand(unsigned(i)))[0]);
    return out;
  }
  Group select(llvm::Value *cond, const Group &a, const Group &b) {
    Group out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(l.b.CreateSelect(cond, a[i], b[i]));
    return out;
  }
  Group shuffled(const Group &g, Shuffle mode, llvm::Value *laneOrDelta) {
    Group out;
    for (llvm::Value *v : g)
      out.push_back(shuffle(l, v, mode, laneOrDelta));
    return out;
  }
  // `p` combined before `g`; g alone where p does not hold.
  Group apply(const Prefix &p, const Group &g) {
    if (!p.g)
      return g;
    Group c = combine(*p.g, g);
    return p.valid ? select(p.valid, c, g) : c;
  }
  // `a` then `b`, each possibly absent.
  Prefix then(const Prefix &a, const Prefix &b) {
    if (!a.g)
      return b;
    if (!b.g)
      return a;
    Group c = combine(*a.g, *b.g);
    if (!a.valid && !b.valid)
      return {c, nullptr};
    if (!a.valid)
      return {select(b.valid, c, *a.g), nullptr};
    if (!b.valid)
      return {select(a.valid, c, *b.g), nullptr};
    return {select(b.valid, select(a.valid, c, *b.g), *a.g), l.b.CreateOr(a.valid, b.valid)};
  }

  // 0 .. count-1 in scan order.
  std::vector<int64_t> inOrder(int64_t count) const {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < count; ++i)
      v.push_back(reverse ? count - 1 - i : i);
    return v;
  }
  // A coordinate's rank in scan order among `count` (its value modulo count: copies share it).
  llvm::Value *rankOf(llvm::Value *coordinate, int64_t count) {
    auto &b = l.b;
    if (count == 1)
      return b.getInt32(0);
    llvm::Value *c = modulo(coordinate, count);
    return reverse ? b.CreateSub(b.getInt32(int32_t(count - 1)), c) : c;
  }
  llvm::Value *modulo(llvm::Value *v, int64_t count) {
    auto &b = l.b;
    return (count & (count - 1)) == 0 ? b.CreateAnd(v, b.getInt32(int32_t(count - 1)))
                                      : b.CreateURem(v, b.getInt32(int32_t(count)));
  }

  // Shared-memory slot of component i for (row, rep, warp) in the current bank.
  llvm::Value *slot(size_t i, llvm::Value *bank, llvm::Value *row, int64_t rep, llvm::Value *warp) {
    auto &b = l.b;
    int64_t perBank = scanTotalSlots(op);
    int64_t base = op.intAttr("smem_offset");
    for (size_t j = 0; j < i; ++j)
      base += 2 * perBank * reduceSlotBytes(op.result(unsigned(j))->type());
    llvm::Value *index = b.CreateAdd(
        b.CreateMul(bank, b.getInt32(int32_t(perBank))),
        b.CreateAdd(b.CreateMul(row, b.getInt32(int32_t(sp.reps * sp.warps))),
                    b.CreateAdd(b.getInt32(int32_t(rep * sp.warps)), warp)));
    llvm::Value *bytes = b.CreateMul(
        index, b.getInt32(int32_t(reduceSlotBytes(op.result(unsigned(i))->type()))));
    return b.CreateGEP(b.getInt8Ty(), l.programSmemBase(),
                       b.CreateAdd(b.getInt64(base), b.CreateZExt(bytes, b.getInt64Ty())));
  }

  // The row-major index of the line holding register k among the block's lines (the
  // coordinates other than the axis).
  llvm::Value *lineIndex(int64_t k) {
    auto &b = l.b;
    std::vector<llvm::Value *> c = l.coordinates(in, k);
    const auto &shape = in->type().shape();
    int64_t axis = op.intAttr("axis");
    llvm::Value *row = b.getInt32(0);
    for (size_t i = 0; i < c.size(); ++i)
      if (int64_t(i) != axis)
        row = b.CreateAdd(b.CreateMul(row, b.getInt32(int32_t(shape[i]))), c[i]);
    return row;
  }

  void run() {
    auto &b = l.b;
    const int64_t s = sp.run, P = sp.reps, T = sp.lanes, W = sp.warps;
    // A thread's lines: for each register index off the axis, its registers along it.
    std::map<int64_t, std::vector<int64_t>> lines;
    int64_t regsAlong = map.registersPerDim()[size_t(d)];
    for (int64_t k = 0; k < map.elementsPerThread(); ++k) {
      std::vector<int64_t> index = map.registerIndex(k);
      int64_t r = index[size_t(d)];
      index[size_t(d)] = 0;
      auto &line = lines[map.registerNumber(index)];
      line.resize(size_t(regsAlong));
      line[size_t(r)] = k;
    }
    auto element = [&](int64_t k) {
      Group g;
      for (size_t i = 0; i < n; ++i)
        g.push_back(l.get(op.operand(unsigned(i))).at(size_t(k)));
      return g;
    };
    std::vector<Group> out(size_t(map.elementsPerThread()));
    // (line, rep) -> the run's total, then the lanes' inclusive scan of it.
    std::map<std::pair<int64_t, int64_t>, Group> totals;

    // 1. Each run in registers.
    for (auto &[key, regs] : lines)
      for (int64_t p = 0; p < P; ++p) {
        std::optional<Group> acc;
        for (int64_t j : inOrder(s)) {
          int64_t k = regs[size_t(p * s + j)];
          acc = acc ? combine(*acc, element(k)) : element(k);
          out[size_t(k)] = *acc;
        }
        totals[{key, p}] = *acc;
      }

    // 2. Across the lanes: an inclusive scan of the runs' totals, then each lane's exclusive
    // prefix from the lane before it.
    Shuffle fromEarlier = reverse ? Shuffle::Down : Shuffle::Up;
    llvm::Value *laneRank = rankOf(l.laneCoordinate(map, d), T);
    int64_t laneStride = map.laneStride(d);
    for (int64_t off = 1; off < T; off *= 2) {
      llvm::Value *has = b.CreateICmpUGE(laneRank, b.getInt32(int32_t(off)));
      for (auto &[at, t] : totals) {
        Group before = shuffled(t, fromEarlier, b.getInt32(int32_t(off * laneStride)));
        t = select(has, combine(before, t), t);
      }
    }
    std::map<std::pair<int64_t, int64_t>, Prefix> lanePrefix;
    if (T > 1) {
      llvm::Value *has = b.CreateICmpUGT(laneRank, b.getInt32(0));
      for (auto &[at, t] : totals)
        lanePrefix[at] = {shuffled(t, fromEarlier, b.getInt32(int32_t(laneStride))), has};
    }

    // 3. Across reps and warps: every chunk's total (its last lane's inclusive scan), combined
    // over the chunks before this thread's.
    std::map<std::pair<int64_t, int64_t>, Prefix> chunkPrefix;
    if (P > 1 || W > 1) {
      // total(key, p, w): chunk (p, w)'s total as this thread sees it.
      std::function<Group(int64_t, int64_t, int64_t)> total;
      llvm::Value *warpRank = rankOf(l.warpCoordinate(map, d), W);
      if (W == 1) {
        llvm::Value *lane = nullptr;
        if (T > 1) { // the lane of the same line whose rank is last
          llvm::Value *last = b.getInt32(int32_t(reverse ? 0 : T - 1));
          llvm::Value *mine = modulo(l.laneCoordinate(map, d), T);
          lane = b.CreateAdd(l.laneId, b.CreateMul(b.CreateSub(last, mine),
                                                   b.getInt32(int32_t(laneStride))));
        }
        std::map<std::pair<int64_t, int64_t>, Group> lastTotals;
        for (auto &[at, t] : totals)
          lastTotals[at] = lane ? shuffled(t, Shuffle::Index, lane) : t;
        total = [lastTotals](int64_t key, int64_t p, int64_t) { return lastTotals.at({key, p}); };
      } else {
        llvm::Value *bank = b.CreateLoad(b.getInt32Ty(), l.reductionBank);
        b.CreateStore(b.CreateXor(bank, b.getInt32(1)), l.reductionBank);
        std::map<int64_t, llvm::Value *> rows;
        for (auto &[key, regs] : lines)
          rows[key] = lineIndex(regs[0]);
        llvm::Value *warp = modulo(l.warpCoordinate(map, d), W);
        llvm::Value *lastLane = b.CreateICmpEQ(laneRank, b.getInt32(int32_t(T - 1)));
        l.ifThen(lastLane, "scan.totals", [&] {
          for (auto &[at, t] : totals)
            for (size_t i = 0; i < n; ++i)
              b.CreateStore(t[i], slot(i, bank, rows.at(at.first), at.second, warp));
        });
        l.barrier();
        std::map<std::tuple<int64_t, int64_t, int64_t>, Group> loaded;
        for (auto &[at, t] : totals)
          for (int64_t w = 0; w < W; ++w) {
            Group g;
            for (size_t i = 0; i < n; ++i)
              g.push_back(b.CreateLoad(t[i]->getType(),
                                       slot(i, bank, rows.at(at.first), at.second,
                                            b.getInt32(int32_t(w)))));
            loaded[{at.first, at.second, w}] = g;
          }
        total = [loaded](int64_t key, int64_t p, int64_t w) { return loaded.at({key, p, w}); };
      }
      for (auto &[key, regs] : lines) {
        std::optional<Group> whole; // the chunks of the reps before this one
        for (int64_t p : inOrder(P)) {
          Prefix pre{whole, nullptr};
          std::vector<int64_t> warps = inOrder(W);
          for (int64_t wr = 0; wr < W; ++wr) {
            Group t = total(key, p, warps[size_t(wr)]);
            if (wr < W - 1) { // before this thread's warp when its rank is larger
              llvm::Value *before = b.CreateICmpUGT(warpRank, b.getInt32(int32_t(wr)));
              pre = pre.g ? Prefix{select(before, combine(*pre.g, t), *pre.g), pre.valid}
                          : Prefix{t, before};
            }
            whole = whole ? combine(*whole, t) : t;
          }
          chunkPrefix[{key, p}] = pre;
        }
      }
    }

    // 4. Every element: the chunks' prefix, the lanes' prefix, then the run's scan.
    for (auto &[key, regs] : lines)
      for (int64_t p = 0; p < P; ++p) {
        Prefix prefix = then(chunkPrefix[{key, p}], lanePrefix[{key, p}]);
        for (int64_t j = 0; j < s; ++j) {
          int64_t k = regs[size_t(p * s + j)];
          out[size_t(k)] = apply(prefix, out[size_t(k)]);
        }
      }
    for (size_t i = 0; i < n; ++i) {
      Elements e;
      for (const Group &g : out)
        e.push_back(g[i]);
      l.set(op.result(unsigned(i)), std::move(e));
    }
  }
};

} // namespace

bool lowerScan(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::Scan)
    return false;
  ScanLowering(l, op).run();
  return true;
}

} // namespace tritium::codegen
