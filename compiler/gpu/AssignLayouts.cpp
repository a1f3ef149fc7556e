// Layout assignment (TIR -> GIR): gives every block value a layout, anchored on loads and
// stores, and inserts convert_layout where two choices meet.
//
// 1. Anchors: each block shape that is loaded or stored gets a blocked layout whose fastest
//    dimension is the one the addresses run along (axis analysis), with runs of up to 16 bytes
//    of the narrowest element loaded or stored at that shape. Other shapes get the same rule
//    with the last dimension fastest. For 1-D blocks this is the layout every kernel had
//    before layouts became values, so 1-D kernels compile as they did.
// 2. Backward: each value wants the layout its consumers want. A store's value and a load's
//    pointers want the anchor; elementwise operands want their result's layout; an
//    expand_dims input wants the slice of its result's layout along the new axis; a reduction
//    input wants the parent of its result's slice. The first want that reaches a value wins.
// 3. Forward, in program order: each op's result takes the layout the op implies from its
//    operands (a reduction: the slice of its input's; expand_dims: the parent of its input's
//    slice), else the one it wants, else the default for its shape; an operand whose layout
//    differs from what the op needs is converted (convert_layout, through shared memory), or,
//    when it is cheap to make (index math over arange, constant, splat; a broadcast, whose
//    smaller source moves instead), made again in that layout. An elementwise op with no
//    wanted layout takes the layout of an operand that is dear to convert.
//    A reshape that can leave every element in its register takes the layout that does so.
// 4. A convert_layout or reshape between two layouts of one placement is marked in_place.
//
// Stores of blocks smaller than a warp (a tile's per-row statistics) anchor nothing: one warp
// instruction covers them in any layout, so they store the value in the layout it has, and
// their pointers follow it. The per-row mean and rstd of a LayerNorm forward's [2, 512] tile
// then stay in the slice layout the row sums give, where they went to the store's layout and
// back through shared memory (two barriers each), with the rows' indices and masks, six times
// per tile (the forward at 512 columns 2-3% faster on the H200). Small loads keep their
// anchors: read into the slice layout, every thread loads each row's value, and the LayerNorm
// backward at 512 columns, which loads its per-row statistics a tile ahead, ran 3-5% slower.
// Wants also flow into the values a for loop carries, from what its body wants of them.
#include "compiler/analysis/AxisInfo.h"
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace tritium {

namespace {

constexpr int kWarpSize = 32;
constexpr int kVectorBytes = 16;

int64_t floorPow2(int64_t v) { return v < 1 ? 1 : int64_t(std::bit_floor(uint64_t(v))); }

// The loops (for and while) around `op`: how often it runs, relative to its neighbours.
int loopDepth(const ir::Op &op) {
  int depth = 0;
  for (const ir::Block *b = op.parentBlock(); b && b->parentOp(); b = b->parentOp()->parentBlock())
    if (b->parentOp()->kind() == ir::OpKind::For || b->parentOp()->kind() == ir::OpKind::While)
      ++depth;
  return depth;
}

// Ops whose pointers anchor layouts: loads, stores and atomics.
bool isMemoryOp(ir::OpKind k) {
  return k == ir::OpKind::Load || k == ir::OpKind::Store || k == ir::OpKind::AtomicRMW ||
         k == ir::OpKind::AtomicCAS;
}

// A store of a block of fewer elements than a warp has lanes: it anchors no layout.
bool isSmallStore(const ir::Op &op) {
  return op.kind() == ir::OpKind::Store && op.operand(0)->type().isBlock() &&
         op.operand(1)->type().isBlock() && op.operand(0)->type().numElements() < kWarpSize;
}

class LayoutAssignment {
public:
  LayoutAssignment(ir::Function &fn, int numWarps)
      : fn_(fn), numWarps_(numWarps), threads_(int64_t(kWarpSize) * numWarps), axes_(fn) {}

  void run() {
    // Shapes no layout can hold are reported at the first op that makes one.
    ir::walk(fn_.body(), [&](ir::Op &op) {
      for (auto &r : op.results())
        if (r->type().isBlock())
          checkShape(r->type(), op.loc());
    });
    collectAnchors();
    propagateBackward();
    for (auto &arg : fn_.body().arguments())
      if (arg->type().isBlock())
        arg->setLayout(defaultLayout(arg->type(), fn_.loc()));
    assignBlock(fn_.body());
    markInPlace();
    fn_.setAttr("num_warps", int64_t(numWarps_));
  }

  // A convert_layout or reshape whose two layouts put every element in the same register of
  // the same thread (two names for one placement, as a slice of [256, 8] and a [256] of one
  // element per thread) moves nothing: marked "in_place", it takes no shared memory and lowers
  // to its operand's registers.
  void markInPlace() {
    ir::walk(fn_.body(), [&](ir::Op &op) {
      if (op.kind() != ir::OpKind::ConvertLayout && op.kind() != ir::OpKind::Reshape)
        return;
      const ir::Value *in = op.operand(0), *out = op.result();
      if (in->type().isBlock() && out->type().isBlock() &&
          ir::samePlacement(*in->layout(), in->type().shape(), *out->layout(),
                            out->type().shape()))
        op.setAttr("in_place", int64_t(1));
    });
  }

private:
  // --- choosing blocked layouts ---------------------------------------------------------------

  void checkShape(const ir::Type &t, const SourceLoc &loc) {
    if (t.rank() == 1) {
      int64_t n = t.shape()[0];
      if (!ir::hasBlockedLayout(n, threads_))
        userError(t.str() + ": a block size must be a power of two or a multiple of 32 x " +
                      "num_warps = " + std::to_string(threads_),
                  loc);
    } else {
      for (int64_t d : t.shape())
        if (!std::has_single_bit(uint64_t(d)))
          userError(t.str() + ": the dimensions of a block of rank " + std::to_string(t.rank()) +
                        " must be powers of two",
                    loc);
    }
    int64_t perThread = std::max<int64_t>(1, t.numElements() / threads_);
    if (perThread > kMaxElementsPerThread)
      userError(t.str() + " needs " + std::to_string(perThread) + " elements per thread with " +
                    "num_warps=" + std::to_string(numWarps_) + " (at most " +
                    std::to_string(kMaxElementsPerThread) +
                    "): raise num_warps or loop over smaller blocks",
                loc);
  }

  // Runs of up to 16 bytes of `bytes`-wide elements along `order[0]`, then lanes and warps
  // spread from the fastest dimension outwards; what is left over replicates along the fastest.
  ir::Layout blockedFor(const std::vector<int64_t> &shape, int bytes, std::vector<int> order,
                        int64_t maxRun = kVectorBytes) {
    int rank = int(shape.size());
    std::vector<int> spt(size_t(rank), 1), tpw(size_t(rank), 1), wpc(size_t(rank), 1);
    int fast = order[0];
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    int64_t perThread = std::max<int64_t>(1, n / threads_);
    int64_t vec = std::max<int64_t>(1, std::min<int64_t>(kVectorBytes / bytes, maxRun));
    // The run divides the thread's elements (12 fp16 elements take runs of 4).
    spt[size_t(fast)] = int(rank == 1 ? std::gcd(perThread, vec)
                                      : std::min({vec, shape[size_t(fast)], perThread}));
    int64_t lanes = kWarpSize, warps = numWarps_;
    for (int d : order) {
      int64_t room = std::max<int64_t>(1, shape[size_t(d)] / spt[size_t(d)]);
      tpw[size_t(d)] = int(std::min(lanes, floorPow2(room)));
      lanes /= tpw[size_t(d)];
    }
    tpw[size_t(fast)] *= int(lanes);
    for (int d : order) {
      int64_t room =
          std::max<int64_t>(1, shape[size_t(d)] / (int64_t(spt[size_t(d)]) * tpw[size_t(d)]));
      wpc[size_t(d)] = int(std::min(warps, floorPow2(room)));
      warps /= wpc[size_t(d)];
    }
    wpc[size_t(fast)] *= int(warps);
    return ir::Layout::blocked(spt, tpw, wpc, order);
  }

  static std::vector<int> defaultOrder(int rank) {
    std::vector<int> order;
    for (int d = rank - 1; d >= 0; --d)
      order.push_back(d);
    return order;
  }

  ir::Layout defaultLayout(const ir::Type &t, const SourceLoc &loc) {
    checkShape(t, loc);
    auto it = anchors_.find(t.shape());
    if (it != anchors_.end())
      return it->second;
    int bytes = t.isPtr() ? 8 : std::max(1, ir::bitWidth(t.kind()) / 8);
    return blockedFor(t.shape(), bytes, defaultOrder(t.rank()));
  }

  // --- 1. anchors -----------------------------------------------------------------------------

  void collectAnchors() {
    // The narrowest element loaded or stored at each shape decides the run.
    std::map<std::vector<int64_t>, int> narrowest;
    std::vector<ir::Op *> memoryOps;
    ir::walk(fn_.body(), [&](ir::Op &op) {
      if (!isMemoryOp(op.kind()) || isSmallStore(op))
        return;
      const ir::Type &ptr = op.operand(0)->type();
      if (!ptr.isBlock())
        return;
      memoryOps.push_back(&op);
      int bytes = ir::byteWidth(ptr.kind());
      auto [it, inserted] = narrowest.emplace(ptr.shape(), bytes);
      if (!inserted)
        it->second = std::min(it->second, bytes);
    });
    // Fastest: the dimension the addresses are most contiguous along (the last on ties), as
    // the first memory op of the shape sees it.
    std::map<std::vector<int64_t>, std::vector<int>> orders;
    for (ir::Op *op : memoryOps) {
      const ir::Value *ptr = op->operand(0);
      const ir::Type &t = ptr->type();
      checkShape(t, op->loc());
      if (anchors_.count(t.shape()) || orders.count(t.shape()))
        continue;
      AxisInfo info = axes_.get(ptr);
      std::vector<int> order = defaultOrder(t.rank());
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return info.contiguity[size_t(a)] > info.contiguity[size_t(b)];
      });
      orders.emplace(t.shape(), std::move(order));
    }
    // A shape whose loads and stores can none of them be one vector per run (their addresses
    // are not aligned or contiguous for it along the fast dimension) takes runs of what they
    // can access: held in runs of 16 bytes, each element of a warp's store instruction would
    // write its own partial sector, where runs of one element write consecutive addresses
    // (Triton's coalescing rule; a shape with one op that can be a vector keeps its runs).
    // Only the accesses in the shape's deepest loops count: a weight vector loaded once
    // before the loop must not give 16-byte runs to the misaligned rows read on every step.
    std::map<std::vector<int64_t>, int64_t> maxRun;
    std::map<std::vector<int64_t>, int> deepest;
    for (ir::Op *op : memoryOps) {
      const std::vector<int64_t> &shape = op->operand(0)->type().shape();
      auto [it, inserted] = deepest.emplace(shape, loopDepth(*op));
      if (!inserted)
        it->second = std::max(it->second, loopDepth(*op));
    }
    for (ir::Op *op : memoryOps) {
      const ir::Value *ptr = op->operand(0);
      auto order = orders.find(ptr->type().shape());
      if (order == orders.end() || loopDepth(*op) < deepest.at(ptr->type().shape()))
        continue;
      AxisInfo info = axes_.get(ptr);
      size_t fast = size_t(order->second[0]);
      int64_t bytes = ir::byteWidth(ptr->type().kind());
      int64_t run = std::min(info.contiguity[fast], info.divisibility[fast] / bytes);
      run = std::max<int64_t>(1, floorPow2(run));
      auto [it, inserted] = maxRun.emplace(ptr->type().shape(), run);
      if (!inserted)
        it->second = std::max(it->second, run);
    }
    for (auto &[shape, order] : orders) {
      auto run = maxRun.find(shape);
      anchors_.emplace(shape, blockedFor(shape, narrowest.at(shape), order,
                                         run == maxRun.end() ? kVectorBytes : run->second));
    }
  }

  // --- 2. backward wants ----------------------------------------------------------------------

  void want(const ir::Value *v, const ir::Layout &l) {
    if (v->type().isBlock() && l.rank() == v->type().rank())
      wants_.emplace(v, l); // the first want wins
  }

  void propagateBackward() {
    // Anchored ops first, then everything in reverse program order so consumers go first. A
    // dot's accumulator comes before the memory ops: it keeps the tensor cores' layout through
    // the loop that carries it, and the epilogue converts once after the loop.
    std::vector<ir::Op *> ops;
    ir::walk(fn_.body(), [&](ir::Op &op) { ops.push_back(&op); });
    for (ir::Op *op : ops)
      if (op->kind() == ir::OpKind::Dot) {
        ir::Layout l = dotAccumulatorLayout(*op, numWarps_);
        want(op->result(), l);
        want(op->operand(2), l);
      }
    for (ir::Op *op : ops)
      if (isMemoryOp(op->kind()) && op->operand(0)->type().isBlock() && !isSmallStore(*op)) {
        const ir::Layout &anchor = anchors_.at(op->operand(0)->type().shape());
        for (const ir::Value *v : op->operands())
          want(v, anchor);
        if (op->numResults())
          want(op->result(), anchor);
      }
    // Wants reach a loop's carried values and a small store's pointers from consumers that
    // come later in the walk: walked again until nothing new is wanted.
    size_t before = 0;
    do {
      before = wants_.size();
      wantInReverse(ops);
    } while (wants_.size() != before);
  }

  // The layout `v` will likely have: the one wanted of it, else a row sum's slice of what its
  // input wants, else what an elementwise op's operands will have.
  std::optional<ir::Layout> likelyLayout(const ir::Value *v, int depth) {
    if (auto w = wants_.find(v); w != wants_.end())
      return w->second;
    const ir::Op *def = v->definingOp();
    if (!def || depth == 0)
      return std::nullopt;
    switch (def->kind()) {
    case ir::OpKind::ReduceMax:
    case ir::OpKind::ReduceMin:
    case ir::OpKind::ReduceSum:
    case ir::OpKind::Reduce:
      if (auto in = likelyLayout(def->operand(0), depth - 1))
        return ir::Layout::slice(*in, int(def->intAttr("axis")));
      return std::nullopt;
    case ir::OpKind::Dot: // its accumulator's (a step's P carried to the next step's P V)
      return dotAccumulatorLayout(*def, numWarps_);
    case ir::OpKind::If: // a value a branch hands on unchanged, as the If's result keeps it
      for (unsigned i = 0; i < def->numResults(); ++i)
        if (def->result(i) == v)
          for (unsigned r = 0; r < def->numRegions(); ++r) {
            const ir::Value *yielded = def->region(r)->terminator()->operand(i);
            const ir::Op *from = yielded->definingOp();
            if (!from || from->parentBlock() == def->parentBlock())
              return likelyLayout(yielded, depth - 1);
          }
      return std::nullopt;
    default:
      if (ir::isElementwise(def->kind()))
        for (const ir::Value *x : def->operands())
          if (x->type().isBlock() && x->type().shape() == v->type().shape())
            if (auto l = likelyLayout(x, depth - 1))
              return l;
      return std::nullopt;
    }
  }

  void wantInReverse(const std::vector<ir::Op *> &ops) {
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      ir::Op &op = **it;
      if (isSmallStore(op)) {
        // The pointers (and mask) of a small store follow the value stored.
        if (std::optional<ir::Layout> l = likelyLayout(op.operand(1), 4)) {
          want(op.operand(0), *l);
          for (unsigned i = 2; i < op.numOperands(); ++i)
            want(op.operand(i), *l);
        }
        continue;
      }
      if (op.kind() == ir::OpKind::For) {
        // A carried value wants, before the loop and at its yield, what the body wants of it,
        // or else the layout its next value will likely have (a softmax's running sum, made
        // from row sums of the scores, stays in their layout through the loop rather than
        // converting each iteration to what a store after the loop wants).
        const ir::Block &body = *op.region(0);
        for (unsigned i = 3; i < op.numOperands(); ++i) {
          std::optional<ir::Layout> l;
          if (auto w = wants_.find(body.argument(i - 2)); w != wants_.end())
            l = w->second;
          else
            l = likelyLayout(body.terminator()->operand(i - 3), 12);
          if (!l)
            continue;
          want(op.operand(i), *l);
          want(body.argument(i - 2), *l);
          want(body.terminator()->operand(i - 3), *l);
        }
        continue;
      }
      if (!op.numResults() || !op.result()->type().isBlock())
        continue;
      auto w = wants_.find(op.result());
      if (w == wants_.end())
        continue;
      const ir::Layout l = w->second;
      switch (op.kind()) {
      case ir::OpKind::ExpandDims:
        want(op.operand(0), ir::Layout::slice(l, int(op.intAttr("axis"))));
        break;
      case ir::OpKind::Broadcast:
        want(op.operand(0), l);
        break;
      case ir::OpKind::Split: // both halves in the thread that holds the results' element
        want(op.operand(0), ir::withLastDimInThread(l, 2));
        break;
      case ir::OpKind::ReduceMax: case ir::OpKind::ReduceMin: case ir::OpKind::ReduceSum:
      case ir::OpKind::Reduce:
        if (!l.isBlocked() && l.sliceDim() == op.intAttr("axis")) {
          // An input that will likely have another layout whose slice along the axis holds the
          // same rows in the same threads keeps it: the reduction's result then converts in
          // place. (fp8 attention's scores, whose product computes its columns in the 8-bit
          // fragment's order, ByteFragmentColumns.cpp, beside row statistics in the
          // accumulator's slice.)
          ir::Layout parent = l.parent();
          int axis = int(op.intAttr("axis"));
          const std::vector<int64_t> &shape = op.result()->type().shape();
          if (auto likely = likelyLayout(op.operand(0), 12);
              likely && likely->isBlocked() && !(*likely == parent) &&
              ir::samePlacement(ir::Layout::slice(*likely, axis), shape, l, shape))
            parent = *likely;
          for (const ir::Value *v : op.operands())
            want(v, parent);
        }
        break;
      default: // a cluster reduction of a block gives its input's layout back
        if (ir::isElementwise(op.kind()) || isMemoryOp(op.kind()) ||
            op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum)
          for (const ir::Value *v : op.operands())
            if (v->type().shape() == op.result()->type().shape())
              want(v, l);
        break;
      }
    }
  }

  // --- 3. forward assignment ------------------------------------------------------------------

  ir::Layout preferred(const ir::Value *v, const SourceLoc &loc) {
    auto it = wants_.find(v);
    if (it != wants_.end()) {
      checkShape(v->type(), loc);
      return it->second;
    }
    return defaultLayout(v->type(), loc);
  }

  // Operand i of `op` as a value of layout `l`.
  void require(ir::Op &op, unsigned i, const ir::Layout &l) {
    op.setOperand(i, relayout(op.operand(i), l, op));
  }

  // `v` in layout `l` at `op`: itself, a conversion made earlier that is visible there, `v`
  // made again in `l` when that is cheap, else a convert_layout inserted before op.
  ir::Value *relayout(ir::Value *v, const ir::Layout &l, const ir::Op &op) {
    if (!v->type().isBlock() || *v->layout() == l)
      return v;
    auto key = std::make_pair(v, l.str());
    auto found = converted_.find(key);
    // A conversion made earlier in this block (or an enclosing one) is reused.
    if (found != converted_.end() && dominates(found->second, op))
      return found->second;
    ir::Block *block = op.parentBlock();
    ir::Value *out = cheapToMakeAgain(v, kRemakeDepth)
                         ? remake(v, l, op)
                         : insertBefore(block, op, ir::OpKind::ConvertLayout, {v}, v->type(), l,
                                        op.loc(), {});
    converted_[key] = out;
    return out;
  }

  static constexpr int kRemakeDepth = 6;

  // Values cheaper to make again in another layout than to move through shared memory:
  // - made from scalars alone (arange, constants, splats) by integer or boolean ops: a tile's
  //   k offsets, k * BK + arange(0, BK), stay computable ahead of a pipelined loop's step;
  // - broadcasts, whose source (fewer elements) is made again or converted instead: a
  //   per-row statistic broadcast across an attention tile's columns moves its 64 values,
  //   not the 64 x 64 tile;
  // - integer and boolean ops over those: a causal mask compares two broadcast index vectors.
  // A float op is never made twice: its math would run twice.
  static bool cheapToMakeAgain(const ir::Value *v, int depth) {
    const ir::Op *def = v->definingOp();
    if (!def)
      return false;
    switch (def->kind()) {
    case ir::OpKind::Arange: case ir::OpKind::Splat: case ir::OpKind::Constant:
    case ir::OpKind::Broadcast:
      return true;
    case ir::OpKind::ExpandDims:
      return depth > 0 && cheapToMakeAgain(def->operand(0), depth - 1);
    default:
      break;
    }
    bool indexMath = def->kind() == ir::OpKind::Add || def->kind() == ir::OpKind::Sub ||
                     def->kind() == ir::OpKind::Mul || def->kind() == ir::OpKind::And ||
                     def->kind() == ir::OpKind::Or || def->kind() == ir::OpKind::Xor ||
                     def->kind() == ir::OpKind::Shl || def->kind() == ir::OpKind::Shr ||
                     def->kind() == ir::OpKind::Not || def->kind() == ir::OpKind::Cmp ||
                     def->kind() == ir::OpKind::Select ||
                     (def->kind() == ir::OpKind::Cast && !def->operand(0)->type().isFloat());
    bool integral = v->type().isInt() || v->type().kind() == ir::ScalarKind::I1;
    if (depth == 0 || !indexMath || !integral)
      return false;
    for (const ir::Value *o : def->operands())
      if (o->type().isBlock() &&
          (o->type().shape() != v->type().shape() || !cheapToMakeAgain(o, depth - 1)))
        return false;
    return true;
  }

  // `v`'s defining op made again in layout `l`, before `op`, with its block operands in the
  // layouts it then needs (a broadcast's source in `l`, an expand_dims' in the slice of `l`).
  ir::Value *remake(ir::Value *v, const ir::Layout &l, const ir::Op &op) {
    const ir::Op *def = v->definingOp();
    std::vector<ir::Value *> operands;
    for (ir::Value *o : def->operands()) {
      if (!o->type().isBlock()) {
        operands.push_back(o);
        continue;
      }
      ir::Layout want = def->kind() == ir::OpKind::ExpandDims
                            ? ir::Layout::slice(l, int(def->intAttr("axis")))
                            : l;
      operands.push_back(relayout(o, want, op));
    }
    return insertBefore(op.parentBlock(), op, def->kind(), operands, v->type(), l, def->loc(),
                        def->attrs());
  }

  ir::Value *insertBefore(ir::Block *block, const ir::Op &op, ir::OpKind kind,
                          std::vector<ir::Value *> operands, const ir::Type &type,
                          const ir::Layout &l, const SourceLoc &loc,
                          const std::vector<std::pair<std::string, ir::Attr>> &attrs) {
    auto pos = std::find_if(block->ops().begin(), block->ops().end(),
                            [&](const std::unique_ptr<ir::Op> &o) { return o.get() == &op; });
    auto made = std::make_unique<ir::Op>(kind, std::move(operands), std::vector<ir::Type>{type},
                                         loc);
    for (const auto &[name, value] : attrs)
      made->setAttr(name, value);
    made->setParentBlock(block);
    made->result()->setLayout(l);
    ir::Value *out = made->result();
    block->ops().insert(pos, std::move(made));
    return out;
  }

  // Whether the value `v`, made by a convert, is visible at `op` (its block encloses op's).
  static bool dominates(const ir::Value *v, const ir::Op &op) {
    const ir::Block *home = v->definingOp()->parentBlock();
    for (const ir::Block *b = op.parentBlock(); b;
         b = b->parentOp() ? b->parentOp()->parentBlock() : nullptr)
      if (b == home)
        return true;
    return false;
  }

  void assignBlock(ir::Block &block) {
    for (auto it = block.ops().begin(); it != block.ops().end(); ++it) {
      ir::Op &op = **it;
      if (op.numResults() && op.result()->layout())
        continue; // inserted by require(): already has its layout
      assignOp(op);
      for (unsigned r = 0; r < op.numRegions(); ++r) {
        assignBlock(*op.region(r));
        // Every yield but a while condition's hands on the results: in their layouts.
        if (op.kind() == ir::OpKind::While && r == 0)
          continue;
        for (unsigned i = 0; i < op.numResults(); ++i)
          if (op.result(i)->type().isBlock())
            require(*op.region(r)->terminator(), i, *op.result(i)->layout());
      }
    }
  }

  void assignOp(ir::Op &op) {
    using ir::OpKind;
    auto setResult = [&](const ir::Layout &l) {
      if (op.numResults() && op.result()->type().isBlock())
        op.result()->setLayout(l);
    };
    const SourceLoc &loc = op.loc();
    switch (op.kind()) {
    case OpKind::Load:
    case OpKind::Store:
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS: {
      ir::Value *ptr = op.operand(0);
      if (!ptr->type().isBlock())
        return;
      if (isSmallStore(op)) { // the value stored decides
        const ir::Layout l = *op.operand(1)->layout();
        for (unsigned i = 0; i < op.numOperands(); ++i)
          require(op, i, l);
        return;
      }
      const ir::Layout &l = *ptr->layout();
      for (unsigned i = 1; i < op.numOperands(); ++i)
        if (op.operand(i)->type().isBlock()) // not a tensor descriptor's scalars
          require(op, i, l);
      setResult(l);
      return;
    }
    case OpKind::ReduceMax: case OpKind::ReduceMin: case OpKind::ReduceSum:
    case OpKind::Reduce: {
      // The operands of a general reduce share the first one's layout.
      const ir::Layout l = *op.operand(0)->layout();
      for (unsigned i = 1; i < op.numOperands(); ++i)
        require(op, i, l);
      for (auto &r : op.results())
        if (r->type().isBlock())
          r->setLayout(ir::Layout::slice(l, int(op.intAttr("axis"))));
      return;
    }
    case OpKind::ExpandDims: {
      int axis = int(op.intAttr("axis"));
      const ir::Layout &l = *op.operand(0)->layout();
      if (!l.isBlocked() && l.sliceDim() == axis) {
        setResult(l.parent());
        return;
      }
      ir::Layout target = preferred(op.result(), loc);
      require(op, 0, ir::Layout::slice(target, axis));
      setResult(target);
      return;
    }
    case OpKind::Broadcast: {
      // The small input is converted rather than the broadcast result. A result nothing asks a
      // layout of keeps its input's: each of its registers is then one of the input's.
      ir::Layout target = wants_.count(op.result()) ? preferred(op.result(), loc)
                                                    : *op.operand(0)->layout();
      require(op, 0, target);
      setResult(target);
      return;
    }
    case OpKind::Scan: {
      // In registers, in the operands' layout, where it covers the axis evenly (every layout
      // blockedFor makes does); else the operands are converted to the default.
      ir::Layout l = *op.operand(0)->layout();
      const ir::Type &t = op.operand(0)->type();
      ir::LayoutMap map(l, t.shape());
      if (!map.spreadsExactly(map.rootDim(int(op.intAttr("axis")))))
        l = blockedFor(t.shape(), t.isPtr() ? 8 : std::max(1, ir::bitWidth(t.kind()) / 8),
                       defaultOrder(t.rank()));
      for (unsigned i = 0; i < op.numOperands(); ++i)
        require(op, i, l);
      for (auto &r : op.results())
        r->setLayout(l);
      return;
    }
    case OpKind::Join: {
      // The new last dimension stays within each thread: a thread's element i of a and b
      // become its elements [i, 0] and [i, 1], so nothing moves.
      if (!op.operand(0)->type().isBlock()) {
        setResult(ir::Layout::blocked({2}, {kWarpSize}, {numWarps_}));
        return;
      }
      const ir::Layout l = *op.operand(0)->layout();
      require(op, 1, l);
      setResult(ir::withLastDimInThread(l, 2));
      return;
    }
    case OpKind::Split: {
      // Each half is read where the other is: the last dimension's two elements must sit in
      // one thread, else the input is converted to a layout where they do.
      ir::Value *x = op.operand(0);
      int last = x->type().rank() - 1;
      ir::Layout l = *x->layout();
      ir::LayoutMap map(l, x->type().shape());
      if (map.run(map.rootDim(last)) < 2) {
        l = last == 0 ? ir::Layout::blocked({2}, {kWarpSize}, {numWarps_})
                      : ir::withLastDimInThread(
                            preferred(op.result(0), loc), 2);
        require(op, 0, l);
      }
      for (auto &r : op.results())
        if (r->type().isBlock())
          r->setLayout(ir::Layout::slice(l, last));
      return;
    }
    case OpKind::Reshape:
      // Splitting or merging dimensions where every element can stay in its register: the
      // layout that says so. Else through shared memory, as trans.
      if (auto same = ir::reshapedInPlace(*op.operand(0)->layout(),
                                          op.operand(0)->type().shape(),
                                          op.result()->type().shape())) {
        setResult(*same);
        return;
      }
      setResult(preferred(op.result(), loc));
      return;
    case OpKind::Dot: { // the operands go through shared memory in any layout
      checkShape(op.result()->type(), loc);
      ir::Layout l = dotAccumulatorLayout(op, numWarps_);
      require(op, 2, l);
      setResult(l);
      return;
    }
    case OpKind::Trans: // through shared memory: any layout in, the preferred one out
      setResult(preferred(op.result(), loc));
      return;
    case OpKind::For:
    case OpKind::While: {
      // Carried values keep their initial value's layout through the loop, unless the body
      // wants another of them: the initial value (often a constant shared with other uses)
      // is then converted, or made again, once before the loop.
      unsigned first = op.kind() == OpKind::For ? 3 : 0;
      unsigned shift = op.kind() == OpKind::For ? 1 : 0;
      for (unsigned i = first; i < op.numOperands(); ++i) {
        ir::Value *init = op.operand(i);
        if (!init->type().isBlock())
          continue;
        auto w = wants_.find(op.region(0)->argument(i - first + shift));
        if (w != wants_.end() && !(w->second == *init->layout())) {
          require(op, i, w->second);
          init = op.operand(i);
        }
        for (unsigned r = 0; r < op.numRegions(); ++r)
          op.region(r)->argument(i - first + shift)->setLayout(*init->layout());
        op.result(i - first)->setLayout(*init->layout());
      }
      return;
    }
    case OpKind::If:
      // A result that a branch hands on unchanged (a value from before the if, which only the
      // other branch replaces: a mask applied on some steps) keeps that value's layout, so
      // that the untouched path converts nothing; else the wanted or preferred layout. (The
      // regions are laid out after this: only values from before the if have layouts yet.)
      for (unsigned i = 0; i < op.numResults(); ++i) {
        ir::Value *r = op.result(i);
        if (!r->type().isBlock())
          continue;
        std::optional<ir::Layout> kept;
        for (unsigned g = 0; g < op.numRegions() && !kept; ++g)
          kept = op.region(g)->terminator()->operand(i)->layout();
        r->setLayout(kept ? *kept : preferred(r, loc));
      }
      return;
    default:
      break;
    }
    if (!op.numResults() || !op.result()->type().isBlock()) {
      return;
    }
    // Elementwise ops and sources: the wanted layout if an operand already has it, else the
    // layout of the first block operand that would be dear to convert (not a broadcast nor
    // index math the others can be made again as), else the first block operand's, else the
    // wanted or default one. An attention tile's P = exp2(S - lse(None, _)) masked by
    // compares of broadcast indices keeps S's accumulator layout that way.
    std::optional<ir::Layout> chosen;
    auto w = wants_.find(op.result());
    for (ir::Value *v : op.operands())
      if (v->type().isBlock() && w != wants_.end() && *v->layout() == w->second)
        chosen = w->second;
    for (bool dearOnly : {true, false})
      for (ir::Value *v : op.operands())
        if (!chosen && v->type().isBlock() && v->type().shape() == op.result()->type().shape() &&
            !(dearOnly && cheapToMakeAgain(v, kRemakeDepth)))
          chosen = *v->layout();
    if (!chosen)
      chosen = preferred(op.result(), loc);
    for (unsigned i = 0; i < op.numOperands(); ++i)
      require(op, i, *chosen);
    for (auto &r : op.results()) // an inline_asm's results share it
      if (r->type().isBlock())
        r->setLayout(*chosen);
  }

  ir::Function &fn_;
  int numWarps_;
  int64_t threads_;
  AxisAnalysis axes_;
  std::map<std::vector<int64_t>, ir::Layout> anchors_;
  std::unordered_map<const ir::Value *, ir::Layout> wants_;
  std::map<std::pair<const ir::Value *, std::string>, ir::Value *> converted_;
};

} // namespace

void assignLayouts(ir::Function &fn, int numWarps) { LayoutAssignment(fn, numWarps).run(); }

} // namespace tritium
