// The verifier: SSA dominance (values are used only where they are visible), per-op type rules,
// and, for GIR, layouts on every block value.
#include "compiler/ir/Verifier.h"

#include "compiler/ir/Printer.h"

#include <cstdint>
#include <unordered_set>

namespace tritium::ir {

namespace {

class Verifier {
public:
  Verifier(const Function &fn, const std::string &stage, const VerifyOptions &o)
      : fn_(fn), stage_(stage), opts_(o) {}

  void run() {
    for (auto &arg : fn_.body().arguments())
      define(arg.get(), nullptr);
    verifyBlock(fn_.body());
  }

private:
  [[noreturn]] void fail(const Op *op, const std::string &msg) {
    std::string where = op ? std::string("'") + op->name() + "' at " + op->loc().str() : "kernel";
    internalError("IR verification failed after " + stage_ + ": " + where + ": " + msg +
                  "\n--- IR ---\n" + print(fn_));
  }

  void define(const Value *v, const Op *op) {
    visible_.insert(v);
    if (opts_.requireLayouts && v->type().isBlock() && !v->layout())
      fail(op, "block value without a layout");
  }

  void verifyBlock(const Block &block) {
    std::vector<const Value *> scope;
    for (auto &arg : block.arguments())
      if (!visible_.count(arg.get())) {
        define(arg.get(), block.parentOp());
        scope.push_back(arg.get());
      }
    for (const auto &op : block.ops()) {
      if (op->parentBlock() != &block)
        fail(op.get(), "op's parent block is wrong");
      for (Value *v : op->operands())
        if (!v || !visible_.count(v))
          fail(op.get(), "operand used where it is not defined (SSA dominance)");
      verifyOp(*op);
      if (op->body())
        verifyBlock(*op->body());
      for (auto &r : op->results()) {
        define(r.get(), op.get());
        scope.push_back(r.get());
      }
    }
    const Op *term = block.terminator();
    if (block.parentOp() && (!term || term->kind() != OpKind::Yield))
      fail(block.parentOp(), "body does not end with 'yield'");
    for (const Value *v : scope)
      visible_.erase(v); // values of an inner block are not visible after it
  }

  void expect(const Op &op, bool cond, const std::string &msg) {
    if (!cond)
      fail(&op, msg);
  }

  void verifyOp(const Op &op) {
    auto n = op.numOperands();
    auto ty = [&](unsigned i) { return op.operand(i)->type(); };
    auto res = [&]() { return op.result()->type(); };
    // Every op but these gives exactly one result (res() reads it); a loop gives one per
    // carried value, checked below.
    bool noResult = op.kind() == OpKind::Store || op.kind() == OpKind::Print ||
                    op.kind() == OpKind::Yield;
    if (op.kind() != OpKind::For)
      expect(op, op.numResults() == (noResult ? 0u : 1u),
             noResult ? "this op gives no result" : "this op gives one result");
    switch (op.kind()) {
    case OpKind::Constant: {
      expect(op, n == 0 && op.hasAttr("value"), "constant needs a value and no operands");
      const Attr &v = op.attr("value");
      expect(op, !res().isPtr(), "constants are numbers, not pointers");
      expect(op,
             std::holds_alternative<int64_t>(v) ||
                 (res().isFloat() && std::holds_alternative<double>(v)),
             "a constant's value must be an integer, or a number for a float type");
      break;
    }
    case OpKind::ProgramId:
    case OpKind::NumPrograms:
      expect(op, res() == Type::scalar(ScalarKind::I32), "grid queries give i32");
      break;
    case OpKind::Arange: {
      // The lowering computes start + i in i32: both ends must be 32-bit.
      int64_t start = op.intAttr("start"), end = op.intAttr("end");
      expect(op, start >= INT32_MIN && end <= INT32_MAX && start < end,
             "arange's start < end must be 32-bit integers");
      expect(op, res().rank() == 1 && res().element() == Type::scalar(ScalarKind::I32) &&
                     res().numElements() == end - start,
             "arange's shape must be end - start");
      break;
    }
    case OpKind::Splat:
      expect(op, n == 1 && !ty(0).isBlock() && res().isBlock() && res().element() == ty(0),
             "splat takes a scalar to a block of its type");
      break;
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
    case OpKind::Minimum: case OpKind::Maximum: case OpKind::And: case OpKind::Or:
      expect(op, n == 2 && ty(0) == ty(1) && res() == ty(0) && !ty(0).isPtr(),
             "binary op needs two operands of the result's type");
      break;
    case OpKind::Cmp:
      expect(op, n == 2 && ty(0) == ty(1) && res() == ty(0).withKind(ScalarKind::I1),
             "cmp needs equal operand types and gives i1 of their shape");
      {
        // The lowering and the interpreter know these; anything else read as "ne" before.
        const std::string *pred = op.hasAttr("pred") ? std::get_if<std::string>(&op.attr("pred"))
                                                     : nullptr;
        expect(op,
               pred && (*pred == "lt" || *pred == "le" || *pred == "gt" || *pred == "ge" ||
                        *pred == "eq" || *pred == "ne"),
               "cmp needs {pred = \"lt\"|\"le\"|\"gt\"|\"ge\"|\"eq\"|\"ne\"}");
      }
      break;
    case OpKind::Select:
      expect(op, n == 3 && ty(0) == res().withKind(ScalarKind::I1) && ty(1) == res() &&
                     ty(2) == res(), "select(cond, a, b) types disagree");
      break;
    case OpKind::Neg: case OpKind::Exp:
      expect(op, n == 1 && ty(0) == res() && (op.kind() == OpKind::Neg || res().isFloat()),
             "unary op types disagree");
      break;
    case OpKind::Cast:
      expect(op, n == 1 && ty(0).shape() == res().shape() && !res().isPtr(),
             "cast keeps the shape");
      break;
    case OpKind::AddPtr:
      expect(op, n == 2 && ty(0).isPtr() && ty(1).isInt() && ty(0).shape() == ty(1).shape() &&
                     res() == ty(0), "addptr(ptr, int offsets) of one shape");
      break;
    case OpKind::Load:
      expect(op, (n == 1 || n == 3) && ty(0).isPtr() && res() == ty(0).pointee(),
             "load(ptr[, mask, other]) gives the pointee type");
      if (n == 3)
        expect(op, ty(1) == res().withKind(ScalarKind::I1) && ty(2) == res(),
               "load's mask and other must match its shape and type");
      break;
    case OpKind::Store:
      expect(op, (n == 2 || n == 3) && ty(0).isPtr() && ty(1) == ty(0).pointee() &&
                     op.numResults() == 0, "store(ptr, value[, mask]) types disagree");
      if (n == 3)
        expect(op, ty(2) == ty(1).withKind(ScalarKind::I1), "store's mask has the wrong type");
      break;
    case OpKind::Print:
      expect(op, n == 1 && op.numResults() == 0 && op.hasAttr("prefix") &&
                     std::holds_alternative<std::string>(op.attr("prefix")),
             "print(value) {prefix} takes one value, a string prefix and gives nothing");
      break;
    case OpKind::ReduceMax: case OpKind::ReduceSum: {
      expect(op, n == 1 && ty(0).isBlock(), "reductions take one block");
      auto shape = ty(0).shape();
      int64_t axis = op.intAttr("axis");
      expect(op, axis >= 0 && axis < ty(0).rank(), "reduction axis out of range");
      shape.erase(shape.begin() + axis);
      expect(op, res() == ty(0).withShape(shape), "reduction result type is wrong");
      break;
    }
    case OpKind::ClusterRank:
      expect(op, n == 0 && res() == Type::scalar(ScalarKind::I32), "cluster_rank gives i32");
      break;
    case OpKind::ClusterMax: case OpKind::ClusterSum:
      expect(op, n == 1 && !ty(0).isBlock() && !ty(0).isPtr() && !ty(0).isBool() &&
                     res() == ty(0), "cluster reductions take a number and give its type");
      break;
    case OpKind::ClusterGather:
      expect(op, n == 2 && !ty(0).isBlock() && !ty(0).isPtr() && !ty(0).isBool() &&
                     ty(1) == ty(0) && res().rank() == 1 && res().element() == ty(0),
             "cluster_gather(x, other) takes two numbers of one type and gives a block of it");
      break;
    case OpKind::For: {
      expect(op, n >= 3 && op.body(), "for needs lb, ub, step and a body");
      for (unsigned i = 0; i < 3; ++i)
        expect(op, ty(i).isInt() && !ty(i).isBlock() && ty(i) == ty(0),
               "loop bounds are integer scalars of one type");
      const Block &b = *op.body();
      expect(op, b.arguments().size() == n - 2 && b.argument(0)->type() == ty(0),
             "loop body takes the induction variable and the carried values");
      expect(op, op.numResults() == n - 3, "a loop gives one result per carried value");
      for (unsigned i = 3; i < n; ++i)
        expect(op, b.argument(i - 2)->type() == ty(i) && op.result(i - 3)->type() == ty(i),
               "carried value types disagree");
      expect(op, op.intAttr("num_stages") >= 1, "num_stages must be at least 1");
      break;
    }
    case OpKind::Yield: {
      const Op *loop = op.parentBlock()->parentOp();
      expect(op, loop && loop->kind() == OpKind::For, "yield outside a loop");
      expect(op, n == loop->numResults(), "yield gives one value per carried value");
      for (unsigned i = 0; i < n; ++i)
        expect(op, ty(i) == loop->result(i)->type(), "yielded type disagrees with the loop's");
      expect(op, op.parentBlock()->terminator() == &op, "yield must end its block");
      break;
    }
    }
  }

  const Function &fn_;
  const std::string &stage_;
  const VerifyOptions &opts_;
  std::unordered_set<const Value *> visible_;
};

} // namespace

void verify(const Function &fn, const std::string &stage, const VerifyOptions &options) {
  Verifier(fn, stage, options).run();
}

} // namespace tritium::ir
