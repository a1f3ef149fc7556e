// The verifier: SSA dominance (values are used only where they are visible), per-op type rules,
// and, for GIR, layouts on every block value.
#include "compiler/ir/TensorMap.h"
#include "compiler/ir/Verifier.h"

#include "compiler/ir/CacheHints.h"
#include "compiler/ir/DotRules.h"
#include "compiler/ir/InlineAsmRules.h"
#include "compiler/ir/Printer.h"

#include <algorithm>
#include <cstdint>
#include <optional>
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
    if (v->layout())
      verifyLayout(*v, op);
  }

  // A layout covers its value's rank with 32 lanes per warp and the kernel's warps.
  void verifyLayout(const Value &v, const Op *op) {
    const Layout &l = *v.layout();
    if (!v.type().isBlock() || l.rank() != v.type().rank())
      fail(op, "layout " + l.str() + " does not fit " + v.type().str());
    const Layout &root = l.root();
    int lanes = 1, warps = 1;
    for (int d = 0; d < root.rank(); ++d) {
      lanes *= root.threadsPerWarp()[size_t(d)];
      warps *= root.warpsPerCTA()[size_t(d)];
    }
    if (lanes != 32)
      fail(op, "layout " + l.str() + " spreads over " + std::to_string(lanes) +
                   " lanes, not the warp's 32");
    if (std::optional<int64_t> numWarps = fn_.intAttr("num_warps"); numWarps && warps != *numWarps)
      fail(op, "layout " + l.str() + " spreads over " + std::to_string(warps) +
                   " warps, not the kernel's num_warps = " + std::to_string(*numWarps));
  }

  // GIR: the layouts the lowering relies on, as layout assignment makes them. Elementwise and
  // memory ops read every operand in one layout; reductions give the slice of their operands'
  // layout; expand_dims takes the slice of its result's; broadcast and scan keep theirs; loops
  // and branches hand values on in their results' layouts (checked at each yield). Other ops
  // (convert_layout, reshape, trans, sources, print) take any layout. Values without layouts
  // (TIR) are not checked.
  void verifyLayouts(const Op &op) {
    auto layoutOf = [](const Value *v) -> const Layout * {
      return v->type().isBlock() && v->layout() ? &*v->layout() : nullptr;
    };
    auto same = [&](const Value *a, const Value *b, const std::string &what) {
      const Layout *la = layoutOf(a), *lb = layoutOf(b);
      if (la && lb && !(*la == *lb))
        fail(&op, what + ": " + la->str() + " and " + lb->str() + " differ");
    };
    auto allOperandsAndResults = [&](const Value *like, const std::string &what) {
      for (const Value *v : op.operands())
        same(v, like, what);
      for (auto &r : op.results())
        same(r.get(), like, what);
    };
    switch (op.kind()) {
    case OpKind::Load: case OpKind::Store: case OpKind::AtomicRMW: case OpKind::AtomicCAS:
      allOperandsAndResults(op.operand(0), "a memory op's operands and results share the "
                                           "pointers' layout");
      return;
    case OpKind::ReduceMax: case OpKind::ReduceMin: case OpKind::ReduceSum:
    case OpKind::Reduce: {
      for (const Value *v : op.operands())
        same(v, op.operand(0), "reduce's operands share one layout");
      const Layout *in = layoutOf(op.operand(0));
      for (auto &r : op.results()) {
        const Layout *out = layoutOf(r.get());
        if (in && out && !(*out == Layout::slice(*in, int(op.intAttr("axis")))))
          fail(&op, "a reduction's result has the slice of its operand's layout along the axis, "
                    "not " + out->str());
      }
      return;
    }
    case OpKind::ExpandDims: {
      const Layout *in = layoutOf(op.operand(0)), *out = layoutOf(op.result());
      if (in && out && !(*in == Layout::slice(*out, int(op.intAttr("axis")))))
        fail(&op, "expand_dims takes the slice of its result's layout along the axis, not " +
                      in->str());
      return;
    }
    case OpKind::Broadcast:
      allOperandsAndResults(op.operand(0), std::string(op.name()) + " keeps its layout");
      return;
    case OpKind::Scan: {
      allOperandsAndResults(op.operand(0), std::string(op.name()) + " keeps its layout");
      // The register scan walks a line as reps x warps x lanes x run (LayoutMap::spread).
      const Layout *in = layoutOf(op.operand(0));
      if (!in)
        return;
      LayoutMap map(*in, op.operand(0)->type().shape());
      if (!map.spreadsExactly(map.rootDim(int(op.intAttr("axis")))))
        fail(&op, "a scan's layout must cover its axis evenly (the extent a multiple of the "
                  "tile, or a power of two below it), not " + in->str());
      return;
    }
    case OpKind::Dot: // the operands go through shared memory; the accumulator stays put
      same(op.operand(2), op.result(), "dot's accumulator and result share one layout");
      return;
    case OpKind::For: case OpKind::While: {
      unsigned first = op.kind() == OpKind::For ? 3 : 0, skip = op.kind() == OpKind::For ? 1 : 0;
      for (unsigned i = first; i < op.numOperands(); ++i) {
        same(op.operand(i), op.result(i - first), "a carried value keeps its layout");
        for (unsigned r = 0; r < op.numRegions(); ++r)
          same(op.operand(i), op.region(r)->argument(i - first + skip),
               "a carried value keeps its layout");
      }
      return;
    }
    case OpKind::Yield: {
      const Op *parent = op.parentBlock()->parentOp();
      bool handsOn = parent->kind() == OpKind::For || parent->kind() == OpKind::If ||
                     (parent->kind() == OpKind::While && op.parentBlock() == parent->region(1));
      if (handsOn)
        for (unsigned i = 0; i < op.numOperands(); ++i)
          same(op.operand(i), parent->result(i), "yield hands on values in the results' layouts");
      return;
    }
    default:
      if (isElementwise(op.kind()))
        allOperandsAndResults(op.operand(0), "an elementwise op's operands and result share "
                                             "one layout");
      return;
    }
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
      verifyLayouts(*op);
      for (unsigned r = 0; r < op->numRegions(); ++r)
        verifyBlock(*op->region(r));
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

  // {cache} must be one of the op's PTX cache operators (a store's .wb is no load's), and
  // {evict} a known eviction priority.
  void verifyCacheHints(const Op &op, const std::vector<std::string> &modifiers) {
    auto stringAttr = [&](const char *key) -> const std::string * {
      return op.hasAttr(key) ? std::get_if<std::string>(&op.attr(key)) : nullptr;
    };
    if (op.hasAttr("cache")) {
      const std::string *c = stringAttr("cache");
      expect(op, c && isOneOf(*c, modifiers),
             std::string(op.name()) + "'s {cache} must be one of " + joinNames(modifiers));
    }
    if (op.hasAttr("evict")) {
      const std::string *e = stringAttr("evict");
      expect(op, e && isOneOf(*e, evictionPolicies()),
             std::string(op.name()) + "'s {evict} must be one of " + joinNames(evictionPolicies()));
    }
  }

  // A tensor descriptor's scalars from operand `first` on (TensorMap.h): the base pointer (a
  // scalar of `ptr`'s pointee) and i64 scalars.
  void verifyDescriptorScalars(const Op &op, unsigned first, const Type &ptr) {
    if (!tensorRank(op))
      return;
    for (unsigned i = first; i < op.numOperands(); ++i) {
      const Type &t = op.operand(i)->type();
      expect(op, !t.isBlock() && (i == first ? t == ptr.withShape({}) && t.isPtr()
                                              : t.kind() == ScalarKind::I64),
             "a tensor descriptor's op takes its base pointer and i64 scalars");
    }
  }

  void verifyOp(const Op &op) {
    auto n = op.numOperands();
    auto ty = [&](unsigned i) { return op.operand(i)->type(); };
    auto res = [&]() { return op.result()->type(); };
    // Every op but these gives exactly one result (res() reads it); loops, branches and
    // reductions with regions give one per value, checked below.
    bool noResult = op.kind() == OpKind::Store || op.kind() == OpKind::TensorStore ||
                    op.kind() == OpKind::Print ||
                    op.kind() == OpKind::Yield || op.kind() == OpKind::Assert ||
                    op.kind() == OpKind::Assume ||
                    op.kind() == OpKind::Barrier || op.kind() == OpKind::GridDepWait ||
                    op.kind() == OpKind::GridDepLaunchDependents || op.kind() == OpKind::GridSync;
    bool anyResults = op.kind() == OpKind::For || op.kind() == OpKind::If ||
                      op.kind() == OpKind::While || op.kind() == OpKind::Reduce ||
                      op.kind() == OpKind::Scan || op.kind() == OpKind::Split ||
                      op.kind() == OpKind::InlineAsm;
    if (!anyResults)
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
      expect(op, op.hasAttr("axis") && op.intAttr("axis") >= 0 && op.intAttr("axis") <= 2,
             "grid queries take an axis from 0 to 2");
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
    case OpKind::Minimum: case OpKind::Maximum:
      expect(op, n == 2 && ty(0) == ty(1) && res() == ty(0) && !ty(0).isPtr(),
             "binary op needs two operands of the result's type");
      break;
    case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr:
    case OpKind::UMulHi:
      expect(op, n == 2 && ty(0) == ty(1) && res() == ty(0) && (res().isInt() || res().isBool()),
             "integer op needs two integer operands of the result's type");
      if (op.kind() == OpKind::UMulHi)
        expect(op, bitWidth(res().kind()) >= 32, "umulhi takes 32- or 64-bit integers");
      break;
    case OpKind::Hint:
      expect(op, n == 1 && res() == ty(0) && (res().isInt() || res().isPtr()),
             "hint takes an integer or pointer value and gives it back");
      // As the DSL writes them: one power of two per dimension (one for a scalar), at most
      // 2^30, the axis analysis's "divisible by anything".
      for (const char *key : {"multiple_of", "max_contiguous"}) {
        if (!op.hasAttr(key))
          continue;
        const std::string *text = std::get_if<std::string>(&op.attr(key));
        std::vector<int64_t> values = text ? parseIntList(*text) : std::vector<int64_t>{};
        bool ok = int(values.size()) == std::max(1, res().rank());
        for (int64_t v : values)
          ok = ok && v >= 1 && v <= (int64_t(1) << 30) && (v & (v - 1)) == 0;
        expect(op, ok, std::string("hint's {") + key + " = \"...\"} needs one power of two from 1 "
                       "to 2^30 per dimension, comma-separated");
      }
      break;
    case OpKind::Not:
      expect(op, n == 1 && ty(0) == res() && (res().isInt() || res().isBool()),
             "not takes an integer or mask");
      break;
    case OpKind::Bitcast:
      expect(op, n == 1 && ty(0).shape() == res().shape() && !res().isPtr() && !ty(0).isPtr() &&
                     bitWidth(ty(0).kind()) == bitWidth(res().kind()),
             "bitcast keeps the shape and the bit width");
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
    case OpKind::Math: {
      expect(op, op.hasAttr("fn") && std::holds_alternative<std::string>(op.attr("fn")),
             "math needs a function name {fn}");
      auto fn = parseMathFn(op.strAttr("fn"));
      expect(op, fn.has_value(), "unknown math function '" + op.strAttr("fn") + "'");
      expect(op, int(n) == mathArity(*fn), "wrong number of operands for " + op.strAttr("fn"));
      for (unsigned i = 0; i < n; ++i)
        expect(op, ty(i) == res() && (res().isFloat() || (mathAcceptsIntegers(*fn) && res().isInt())),
               "math operands must have the result's (float) type");
      break;
    }
    case OpKind::InlineAsm: {
      auto isString = [&](const char *name) {
        return op.hasAttr(name) && std::holds_alternative<std::string>(op.attr(name));
      };
      auto isInt = [&](const char *name) {
        return op.hasAttr(name) && std::holds_alternative<int64_t>(op.attr(name));
      };
      expect(op, isString("asm") && isString("constraints") && isInt("pack") && isInt("pure") &&
                     (op.intAttr("pure") == 0 || op.intAttr("pure") == 1),
             "inline_asm needs {asm, constraints} strings, {pack} and {pure = 0|1}");
      expect(op, n >= 1 && op.numResults() >= 1, "inline_asm takes operands and gives results");
      std::vector<Type> args, results;
      for (unsigned i = 0; i < n; ++i) {
        expect(op, ty(i).shape() == ty(0).shape(), "inline_asm's operands have one shape");
        args.push_back(ty(i).element());
      }
      for (auto &r : op.results()) {
        expect(op, r->type().shape() == ty(0).shape(),
               "inline_asm's results have its operands' shape");
        results.push_back(r->type().element());
      }
      std::string why = asmError(op.strAttr("asm"), op.strAttr("constraints"), args, results,
                                 op.intAttr("pack"));
      expect(op, why.empty(), "inline_asm: " + why);
      break;
    }
    case OpKind::Cast:
      expect(op, n == 1 && ty(0).shape() == res().shape(), "cast keeps the shape");
      // As the DSL's cast: pointers convert to nothing (their arithmetic is addptr).
      expect(op, !ty(0).isPtr() && !res().isPtr(), "cast converts numbers, not pointers");
      break;
    case OpKind::AddPtr:
      expect(op, n == 2 && ty(0).isPtr() && ty(1).isInt() && ty(0).shape() == ty(1).shape() &&
                     res() == ty(0), "addptr(ptr, int offsets) of one shape");
      break;
    case OpKind::Load: {
      int64_t r = tensorRank(op); // a tensor descriptor's scalars after `other`: TensorMap.h
      expect(op, r >= 0 && r <= 3 && (r ? n == unsigned(4 + 3 * r) : (n == 1 || n == 3)) &&
                     ty(0).isPtr() && res() == ty(0).pointee(),
             "load(ptr[, mask, other]) gives the pointee type");
      verifyDescriptorScalars(op, 3, ty(0));
      if (n >= 3)
        expect(op, ty(1) == res().withKind(ScalarKind::I1) && ty(2) == res(),
               "load's mask and other must match its shape and type");
      verifyCacheHints(op, loadCacheModifiers());
      break;
    }
    case OpKind::Store: {
      int64_t r = tensorRank(op);
      expect(op, r >= 0 && r <= 3 && (r ? n == unsigned(4 + 3 * r) : (n == 2 || n == 3)) &&
                     ty(0).isPtr() && ty(1) == ty(0).pointee() && op.numResults() == 0,
             "store(ptr, value[, mask]) types disagree");
      verifyDescriptorScalars(op, 3, ty(0));
      if (n >= 3)
        expect(op, ty(2) == ty(1).withKind(ScalarKind::I1), "store's mask has the wrong type");
      verifyCacheHints(op, storeCacheModifiers());
      break;
    }
    case OpKind::TensorStore: {
      int64_t r = tensorRank(op);
      expect(op, r >= 1 && r <= 3 && n == unsigned(2 + 3 * r) && ty(0).isBlock() &&
                     ty(0).rank() == r && ty(1).isPtr() && ty(1).pointee() == ty(0).withShape({}),
             "tensor_store(value, base, shape, strides, offsets) types disagree");
      verifyDescriptorScalars(op, 1, ty(1));
      expect(op, op.hasAttr("tensor_map") && op.hasAttr("smem_offset"),
             "tensor_store needs {tensor_map} and {smem_offset}");
      break;
    }
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS: {
      bool cas = op.kind() == OpKind::AtomicCAS;
      int64_t r = tensorRank(op);
      expect(op, r >= 0 && r <= 3 &&
                     (cas ? n == 3 : r ? n == unsigned(4 + 3 * r) : (n == 2 || n == 3)) &&
                     ty(0).isPtr() && op.numResults() == 1 && ty(1) == ty(0).pointee() &&
                     res() == ty(0).pointee(),
             "atomics take pointers and values of their pointee type and give the old values");
      verifyDescriptorScalars(op, 3, ty(0));
      if (cas)
        expect(op, ty(2) == ty(1), "atomic_cas's compare and new values have one type");
      else if (n >= 3)
        expect(op, ty(2) == ty(1).withKind(ScalarKind::I1), "an atomic's mask has the wrong type");
      static const char *sems[] = {"relaxed", "acquire", "release", "acq_rel"};
      static const char *scopes[] = {"cta", "gpu", "sys"};
      auto oneOf = [&](const char *key, auto &list) {
        if (!op.hasAttr(key) || !std::holds_alternative<std::string>(op.attr(key)))
          return false;
        for (const char *s : list)
          if (op.strAttr(key) == s)
            return true;
        return false;
      };
      expect(op, oneOf("sem", sems) && oneOf("scope", scopes), "an atomic's sem or scope is wrong");
      if (!cas) {
        static const char *ops[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
        expect(op, oneOf("op", ops), "unknown atomic op");
      }
      break;
    }
    case OpKind::Barrier:
      expect(op, n == 0 && op.numResults() == 0, "barrier takes and gives nothing");
      break;
    case OpKind::GridDepWait:
      // Every program must pass it: a program that skipped it could finish before the kernel
      // it depends on, and so could this kernel, letting the stream's next kernel start early.
      expect(op, n == 0 && op.numResults() == 0 && !op.parentBlock()->parentOp(),
             "griddep_wait takes and gives nothing and sits at the kernel's top level, outside "
             "loops and branches");
      break;
    case OpKind::GridDepLaunchDependents:
      expect(op, n == 0 && op.numResults() == 0,
             "griddep_launch_dependents takes and gives nothing");
      break;
    case OpKind::GridSync:
      // A program that skipped it would leave every other one waiting for ever.
      expect(op, n == 0 && op.numResults() == 0 && !op.parentBlock()->parentOp(),
             "grid_sync takes and gives nothing and sits at the kernel's top level, outside "
             "loops and branches");
      break;
    case OpKind::Assert:
      expect(op, n == 1 && ty(0).isBool() && op.hasAttr("message") &&
                     std::holds_alternative<std::string>(op.attr("message")),
             "assert takes a mask and a message");
      break;
    case OpKind::Assume:
      expect(op, n == 1 && ty(0).isBool(), "assume takes a condition (i1, or a block of them)");
      break;
    case OpKind::Print:
      expect(op, n == 1 && op.numResults() == 0 && op.hasAttr("prefix") &&
                     std::holds_alternative<std::string>(op.attr("prefix")),
             "print(value) {prefix} takes one value, a string prefix and gives nothing");
      break;
    case OpKind::ExpandDims: {
      expect(op, n == 1 && ty(0).isBlock() && op.hasAttr("axis"), "expand_dims takes a block");
      auto shape = ty(0).shape();
      int64_t axis = op.intAttr("axis");
      expect(op, axis >= 0 && axis <= ty(0).rank(), "expand_dims axis out of range");
      shape.insert(shape.begin() + axis, 1);
      expect(op, res() == ty(0).withShape(shape), "expand_dims result type is wrong");
      break;
    }
    case OpKind::Broadcast: {
      expect(op, n == 1 && ty(0).isBlock() && ty(0).rank() == res().rank() &&
                     ty(0).element() == res().element(),
             "broadcast keeps the rank and element type");
      for (int d = 0; d < res().rank(); ++d)
        expect(op, ty(0).shape()[d] == res().shape()[d] || ty(0).shape()[d] == 1,
               "broadcast repeats dimensions of 1 only");
      break;
    }
    case OpKind::Reshape:
      expect(op, n == 1 && ty(0).isBlock() && res().isBlock() &&
                     ty(0).element() == res().element() &&
                     ty(0).numElements() == res().numElements(),
             "reshape keeps the element type and count");
      break;
    case OpKind::Trans: {
      expect(op, n == 1 && ty(0).isBlock() && op.hasAttr("order"), "trans takes a block");
      std::vector<int64_t> order = parseOrder(op.strAttr("order"));
      expect(op, int(order.size()) == ty(0).rank(), "trans order must permute the dimensions");
      std::vector<int64_t> shape;
      for (int64_t d : order)
        shape.push_back(ty(0).shape()[size_t(d)]);
      expect(op, res() == ty(0).withShape(shape), "trans result type is wrong");
      break;
    }
    case OpKind::Dot: {
      expect(op, n == 3 || (n == 4 && ty(3).isBool() && !ty(3).isBlock()),
             "dot takes (a, b, acc) or (a, b, acc, accumulate: i1)");
      std::string precision = op.hasAttr("input_precision") &&
                                      std::holds_alternative<std::string>(op.attr("input_precision"))
                                  ? op.strAttr("input_precision")
                                  : "";
      std::string why = dotTypeError(ty(0), ty(1), ty(2), precision);
      if (why.empty() && op.hasAttr("max_num_imprecise_acc"))
        why = impreciseAccumulationError(ty(0), op.intAttr("max_num_imprecise_acc"));
      expect(op, why.empty(), why);
      expect(op, res() == ty(2), "dot gives its accumulator's type");
      break;
    }
    case OpKind::Join: {
      expect(op, n == 2 && ty(0) == ty(1) && ty(0).rank() < 3, "join takes two values of one type (of rank 0 to 2)");
      auto shape = ty(0).shape();
      shape.push_back(2);
      expect(op, res() == ty(0).withShape(shape), "join's result adds a last dimension of 2");
      break;
    }
    case OpKind::Split: {
      expect(op, n == 1 && op.numResults() == 2 && ty(0).isBlock() &&
                     ty(0).shape().back() == 2,
             "split takes a block whose last dimension is 2 and gives two results");
      auto shape = ty(0).shape();
      shape.pop_back();
      for (unsigned i = 0; i < 2; ++i)
        expect(op, op.result(i)->type() == ty(0).withShape(shape),
               "split's results drop the last dimension");
      break;
    }
    case OpKind::ConvertLayout:
      expect(op, n == 1 && ty(0).isBlock() && res() == ty(0),
             "convert_layout keeps the type");
      break;
    case OpKind::Reduce:
    case OpKind::Scan: {
      expect(op, n >= 1 && op.numResults() == n && op.numRegions() == 1 && op.hasAttr("axis"),
             "reduce and scan take N blocks, give N results and have a combine region");
      int64_t axis = op.intAttr("axis");
      expect(op, ty(0).isBlock() && axis >= 0 && axis < ty(0).rank(), "reduce axis out of range");
      if (op.hasAttr("reverse")) {
        const int64_t *reverse = std::get_if<int64_t>(&op.attr("reverse"));
        expect(op, op.kind() == OpKind::Scan && reverse && (*reverse == 0 || *reverse == 1),
               "a scan's reverse is 0 or 1 (reduce has none)");
      }
      auto shape = ty(0).shape();
      if (op.kind() == OpKind::Reduce)
        shape.erase(shape.begin() + axis);
      const Block &combine = *op.region(0);
      expect(op, combine.arguments().size() == 2 * n, "reduce's region takes 2N scalars");
      for (unsigned i = 0; i < n; ++i) {
        expect(op, ty(i).shape() == ty(0).shape(), "reduce's operands have one shape");
        expect(op, op.result(i)->type() == ty(i).withShape(shape), "reduce result type is wrong");
        expect(op, combine.argument(i)->type() == ty(i).element() &&
                       combine.argument(i + n)->type() == ty(i).element(),
               "reduce's region arguments have the operands' element types");
      }
      break;
    }
    case OpKind::ReduceMax: case OpKind::ReduceSum: case OpKind::ReduceMin: {
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
      expect(op, n == 1 && !ty(0).isPtr() && !ty(0).isBool() && res() == ty(0),
             "cluster reductions take a number or a block of numbers and give its type");
      // A block's exchange has barriers of its own that complete once per launch.
      expect(op, !ty(0).isBlock() || !op.parentBlock()->parentOp(),
             "a cluster reduction of a block sits at the kernel's top level, outside loops and "
             "branches");
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
      expect(op,
             op.hasAttr("num_stages") && std::holds_alternative<int64_t>(op.attr("num_stages")) &&
                 op.intAttr("num_stages") >= 1,
             "a loop's {num_stages} must be an integer of at least 1");
      break;
    }
    case OpKind::If: {
      expect(op, n == 1 && ty(0) == Type::scalar(ScalarKind::I1) && op.numRegions() == 2,
             "if takes an i1 scalar and has a then and an else region");
      for (unsigned r = 0; r < 2; ++r)
        expect(op, op.region(r)->arguments().empty(), "if's regions take no arguments");
      break;
    }
    case OpKind::While: {
      expect(op, op.numRegions() == 2 && op.numResults() == n,
             "while has a condition and a body region and one result per carried value");
      for (unsigned r = 0; r < 2; ++r) {
        const Block &b = *op.region(r);
        expect(op, b.arguments().size() == n, "while's regions take the carried values");
        for (unsigned i = 0; i < n; ++i)
          expect(op, b.argument(i)->type() == ty(i) && op.result(i)->type() == ty(i),
                 "carried value types disagree");
      }
      break;
    }
    case OpKind::Yield: {
      const Op *parent = op.parentBlock()->parentOp();
      expect(op, parent && (parent->kind() == OpKind::For || parent->kind() == OpKind::If ||
                            parent->kind() == OpKind::While || parent->kind() == OpKind::Reduce ||
                            parent->kind() == OpKind::Scan),
             "yield outside a region");
      expect(op, op.parentBlock()->terminator() == &op, "yield must end its block");
      if (parent->kind() == OpKind::While && op.parentBlock() == parent->region(0)) {
        expect(op, n == 1 && ty(0) == Type::scalar(ScalarKind::I1),
               "a while condition yields one i1 scalar");
        break;
      }
      if (parent->kind() == OpKind::Reduce || parent->kind() == OpKind::Scan) {
        // the combined group, typed as the region's arguments
        expect(op, n == parent->numOperands(), "reduce's combine yields one value per block");
        for (unsigned i = 0; i < n; ++i)
          expect(op, ty(i) == parent->region(0)->argument(i)->type(),
                 "reduce's combine yields the wrong type");
        break;
      }
      expect(op, n == parent->numResults(), "yield gives one value per result");
      for (unsigned i = 0; i < n; ++i)
        expect(op, ty(i) == parent->result(i)->type(), "yielded type disagrees with the result's");
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
