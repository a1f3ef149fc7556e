// Folds a loop's reset of a dot's accumulator to zeros into the dot: a persistent matmul
// carries its accumulator from tile to tile and, at each tile's last K step, writes the tile
// out and starts the next from zeros under an `if`. Written as Triton users write it, the
// zeros are a value that the next iteration's dot reads: on Hopper, 64-128 moves into the
// accumulator's registers, which ptxas answers by serializing every wgmma of the kernel
// (C7514) once a product may be in flight there. Instead the branch hands on the product
// unchanged and a carried flag tells the next product to start from zeros (its `accumulate`
// operand: wgmma's scale-d, a select elsewhere), as Triton's accumulator-init pass does.
//
//   for ... (%acc = zeros) {                for ... (%acc = zeros, %use = true) {
//     %d = dot %a, %b, %acc                   %d = dot %a, %b, %acc, %use
//     %r = if %last { ...%d...; yield 0 }     %r, %u = if %last { ...%d...; yield %d, false }
//          else { yield %d }                           else { yield %d, true }
//     yield %r                                yield %r, %u
//   }                                       }
//
// Only where nothing else reads the carried accumulator (the dot is its one reader), nothing
// but the loop's yield reads the if's result, and the loop's result for it is unused, so no
// reader sees the stale product that replaced the zeros.
#include "compiler/transforms/Passes.h"

#include "compiler/ir/Builder.h"

#include <algorithm>
#include <unordered_map>

namespace tritium {

namespace {

// Whether `v` is a block of zeros: a splat of the constant 0.
bool isZeros(const ir::Value *v) {
  const ir::Op *def = v->definingOp();
  if (!def || def->kind() != ir::OpKind::Splat)
    return false;
  const ir::Op *scalar = def->operand(0)->definingOp();
  if (!scalar || scalar->kind() != ir::OpKind::Constant)
    return false;
  const ir::Attr &value = scalar->attr("value");
  if (const auto *i = std::get_if<int64_t>(&value))
    return *i == 0;
  if (const auto *d = std::get_if<double>(&value))
    return *d == 0.0;
  return false;
}

// A new i1 constant placed right before `block`'s terminator.
ir::Value *flagBeforeTerminator(ir::Block &block, bool value, const SourceLoc &loc) {
  ir::Builder builder(&block);
  ir::Value *flag =
      builder.constant(ir::Type::scalar(ir::ScalarKind::I1), int64_t(value ? 1 : 0), loc);
  auto &ops = block.ops();
  ops.splice(std::prev(ops.end(), 2), ops, std::prev(ops.end()));
  return flag;
}

class Folder {
public:
  explicit Folder(ir::Function &fn) {
    ir::walk(fn.body(), [&](ir::Op &op) {
      for (const ir::Value *v : op.operands())
        ++uses_[v];
    });
  }

  void foldLoop(ir::Op &loop) {
    ir::Block &body = *loop.body();
    ir::Op *yield = body.terminator();
    if (!yield || yield->kind() != ir::OpKind::Yield)
      return;
    unsigned carried = yield->numOperands();
    for (unsigned i = 0; i < carried; ++i)
      foldCarried(loop, i);
  }

private:
  // The carried value i of `loop`, if it is an accumulator reset under an if.
  void foldCarried(ir::Op &loop, unsigned i) {
    ir::Block &body = *loop.body();
    ir::Value *acc = body.argument(i + 1);
    if (uses_[acc] != 1 || uses_[loop.result(i)] != 0)
      return;
    ir::Op *dot = nullptr;
    for (auto &op : body.ops())
      if (op->kind() == ir::OpKind::Dot && op->numOperands() == 3 && op->operand(2) == acc)
        dot = op.get();
    ir::Op *yield = body.terminator();
    ir::Op *branch = yield->operand(i)->definingOp();
    if (!dot || !branch || branch->kind() != ir::OpKind::If || branch->parentBlock() != &body ||
        branch->numRegions() != 2)
      return;
    // The if's result must reach only the loop's yield: a reader after the if in the body
    // would see the stale product where it expected zeros.
    if (uses_[yield->operand(i)] != 1)
      return;
    unsigned j = yield->operand(i)->index();
    ir::Op *thenYield = branch->region(0)->terminator(),
           *elseYield = branch->region(1)->terminator();
    ir::Value *product = dot->result();
    int reset = -1; // the region whose yield is the zeros
    if (isZeros(thenYield->operand(j)) && elseYield->operand(j) == product)
      reset = 0;
    else if (isZeros(elseYield->operand(j)) && thenYield->operand(j) == product)
      reset = 1;
    if (reset < 0)
      return;
    const SourceLoc &loc = dot->loc();
    // The flag: carried from true, false after a reset.
    ir::Builder before(loop.parentBlock());
    ir::Value *init =
        before.constant(ir::Type::scalar(ir::ScalarKind::I1), int64_t(1), loc);
    auto &outer = loop.parentBlock()->ops();
    auto at = std::find_if(outer.begin(), outer.end(), [&](auto &o) { return o.get() == &loop; });
    outer.splice(at, outer, std::prev(outer.end()));
    loop.addOperand(init);
    loop.addResult(init->type());
    ir::Value *use = body.addArgument(init->type());
    dot->addOperand(use);
    for (unsigned r = 0; r < 2; ++r) {
      ir::Block &arm = *branch->region(r);
      ir::Op *armYield = arm.terminator();
      if (int(r) == reset)
        armYield->setOperand(j, product);
      armYield->addOperand(flagBeforeTerminator(arm, int(r) != reset, loc));
    }
    yield->addOperand(branch->addResult(init->type()));
  }

  std::unordered_map<const ir::Value *, int> uses_;
};

} // namespace

void foldAccumulatorResets(ir::Function &fn) {
  Folder folder(fn);
  std::vector<ir::Op *> loops;
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() == ir::OpKind::For)
      loops.push_back(&op);
  });
  for (ir::Op *loop : loops)
    folder.foldLoop(*loop);
}

} // namespace tritium
