// TIR built by hand with ir::Builder: the printed form, the verifier's verdicts on good and bad
// IR, types and dtypes, and the CSE / DCE passes.
#include "compiler/ir/Builder.h"
#include "compiler/ir/IR.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Types.h"
#include "compiler/ir/Verifier.h"
#include "compiler/support/Error.h"
#include "compiler/transforms/Passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

using namespace tritium;
using namespace tritium::ir;

namespace {

const Type F32 = Type::scalar(ScalarKind::F32);
const Type I32 = Type::scalar(ScalarKind::I32);
const Type PtrF32 = Type::pointer(ScalarKind::F32);
const Type BlockI32 = Type::block(I32, {128});
const Type BlockF32 = Type::block(F32, {128});
const Type BlockPtrF32 = Type::block(PtrF32, {128});

SourceLoc at(unsigned line) {
  SourceLoc l;
  l.file = "/somewhere/hand_written.cpp";
  l.line = line;
  return l;
}

// The pieces of the kernel below, for tests that break one of them.
struct Sample {
  std::unique_ptr<Function> fn;
  Value *out = nullptr, *in = nullptr, *n = nullptr;
  Op *arange = nullptr, *load = nullptr, *add = nullptr, *reduce = nullptr, *loop = nullptr,
     *store = nullptr, *yield = nullptr;
};

//   out[i] = sum(in[0:128] + 1.5) for i in range(0, n, 1)
Sample buildSample(bool withLocs = false) {
  Sample s;
  s.fn = std::make_unique<Function>("k", SourceLoc());
  s.fn->setAttr("num_warps", int64_t(4));
  Block &body = s.fn->body();
  s.out = body.addArgument(PtrF32, "out");
  s.in = body.addArgument(PtrF32, "in");
  s.n = body.addArgument(I32, "n");
  auto loc = [&](unsigned line) { return withLocs ? at(line) : SourceLoc(); };

  Builder b(&body);
  s.arange = b.create(OpKind::Arange, {}, {BlockI32}, loc(10));
  s.arange->setAttr("start", int64_t(0));
  s.arange->setAttr("end", int64_t(128));
  Value *ptrs = b.createValue(OpKind::Splat, {s.in}, BlockPtrF32, loc(11));
  Value *addrs = b.createValue(OpKind::AddPtr, {ptrs, s.arange->result()}, BlockPtrF32, loc(11));
  s.load = b.create(OpKind::Load, {addrs}, {BlockF32}, loc(12));
  Value *c = b.constant(F32, 1.5, loc(13));
  Value *cs = b.createValue(OpKind::Splat, {c}, BlockF32, loc(13));
  s.add = b.create(OpKind::Add, {s.load->result(), cs}, {BlockF32}, loc(13));
  s.reduce = b.create(OpKind::ReduceSum, {s.add->result()}, {F32}, loc(14));
  s.reduce->setAttr("axis", int64_t(0));
  Value *lb = b.constant(I32, int64_t(0), loc(15));
  Value *step = b.constant(I32, int64_t(1), loc(15));
  s.loop = b.create(OpKind::For, {lb, s.n, step}, {}, loc(15));
  s.loop->setAttr("num_stages", int64_t(2));
  Block *loopBody = s.loop->createBody();
  Value *iv = loopBody->addArgument(I32);
  Builder inner(loopBody);
  Value *p = inner.createValue(OpKind::AddPtr, {s.out, iv}, PtrF32, loc(16));
  s.store = inner.create(OpKind::Store, {p, s.reduce->result()}, {}, loc(16));
  s.yield = inner.create(OpKind::Yield, {}, {}, loc(17));
  return s;
}

const char *kSamplePrinted = R"(kernel @k(%out: ptr<f32>, %in: ptr<f32>, %n: i32) {num_warps = 4} {
  %0 = arange {start = 0, end = 128} : block<128xi32>
  %1 = splat %in : block<128xptr<f32>>
  %2 = addptr %1, %0 : block<128xptr<f32>>
  %3 = load %2 : block<128xf32>
  %4 = constant {value = 1.5} : f32
  %5 = splat %4 : block<128xf32>
  %6 = add %3, %5 : block<128xf32>
  %7 = reduce_sum %6 {axis = 0} : f32
  %8 = constant {value = 0} : i32
  %9 = constant {value = 1} : i32
  for %8, %n, %9 {num_stages = 2} {
  ^body(%10: i32):
    %11 = addptr %out, %10 : ptr<f32>
    store %11, %7
    yield
  }
}
)";

// Runs the verifier and returns its message, or "" when it accepts the IR.
std::string verifyError(const Function &fn, const VerifyOptions &opts = {}) {
  try {
    verify(fn, "unit-test", opts);
    return "";
  } catch (const InternalError &e) {
    return e.what();
  }
}

size_t countOps(Function &fn, OpKind kind) {
  size_t n = 0;
  walk(fn.body(), [&](Op &op) { n += op.kind() == kind; });
  return n;
}

} // namespace

TEST(IRTest, PrintsHandBuiltKernel) {
  Sample s = buildSample();
  EXPECT_EQ(print(*s.fn), kSamplePrinted);
}

TEST(IRTest, PrintsSourceLocationsUnlessAskedNotTo) {
  Sample s = buildSample(/*withLocs=*/true);
  std::string text = print(*s.fn);
  EXPECT_NE(text.find("  %0 = arange {start = 0, end = 128} : block<128xi32>  "
                      "loc(\"hand_written.cpp:10\")\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    store %11, %7  loc(\"hand_written.cpp:16\")\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  for %8, %n, %9 {num_stages = 2}  loc(\"hand_written.cpp:15\") {\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(print(*s.fn, {.locations = false}), kSamplePrinted);
}

TEST(IRTest, PrintsLayouts) {
  Sample s = buildSample();
  s.arange->result()->setLayout(Layout::blocked({4}, {32}, {1}));
  EXPECT_NE(print(*s.fn).find(
                "%0 = arange {start = 0, end = 128} : block<128xi32, #blocked<spt=[4], tpw=[32], "
                "wpc=[1]>>\n"),
            std::string::npos)
      << print(*s.fn);
}

// Reshapes that split or merge dimensions find the layout that leaves every element in its
// register (then reshape and convert_layout move nothing); those that cannot say so.
TEST(IRTest, ReshapesInPlaceWhereTheRunsAllow) {
  // [2048] in runs of 8 over 8 warps: [256, 8] with a run per row; over 4 warps the tile repeats
  // and each thread holds rows t and t + 128.
  for (int warps : {8, 4}) {
    Layout runs = Layout::blocked({8}, {32}, {warps});
    std::optional<Layout> rows = reshapedInPlace(runs, {2048}, {256, 8});
    ASSERT_TRUE(rows.has_value()) << warps;
    EXPECT_EQ(*rows, Layout::blocked({1, 8}, {32, 1}, {warps, 1}));
    EXPECT_TRUE(samePlacement(runs, {2048}, *rows, {256, 8}));
    // A row's maximum is one element per row in that thread: for 8 warps the same placement as
    // one element per thread, for 4 warps (rows t, t + 128) not that of runs of 2.
    EXPECT_EQ(samePlacement(Layout::slice(*rows, 1), {256}, Layout::blocked({1}, {32}, {8}), {256}),
              warps == 8);
    EXPECT_FALSE(
        samePlacement(Layout::slice(*rows, 1), {256}, Layout::blocked({2}, {32}, {4}), {256}));
  }
  // Merging the rows of a 2-D tile back into one dimension.
  Layout tile = Layout::blocked({1, 4}, {2, 16}, {4, 1});
  std::optional<Layout> flat = reshapedInPlace(tile, {32, 64}, {2048});
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(*flat, Layout::blocked({4}, {32}, {4}));
  // No such layout: threads holding copies (64 elements over 128 threads), another order, and
  // a merge where a row's repeats come before the next row's lanes ([32, 128] in tiles of
  // [8, 64]: the flat index's bits are runs, lanes, a repeat, then lanes again).
  EXPECT_FALSE(reshapedInPlace(Layout::blocked({1}, {32}, {4}), {64}, {8, 8}).has_value());
  EXPECT_FALSE(
      reshapedInPlace(Layout::blocked({4, 1}, {16, 2}, {1, 4}, {0, 1}), {64, 32}, {2048}).has_value());
  EXPECT_FALSE(reshapedInPlace(tile, {32, 128}, {4096}).has_value());
  // Different element counts or warps never match.
  EXPECT_FALSE(samePlacement(Layout::blocked({1}, {32}, {8}), {256}, Layout::blocked({1}, {32}, {8}),
                             {512}));
  EXPECT_FALSE(samePlacement(Layout::blocked({1}, {32}, {8}), {256}, Layout::blocked({2}, {32}, {4}),
                             {256}));
}

TEST(IRTest, FormatsAttributes) {
  EXPECT_EQ(formatAttr(int64_t(-7)), "-7");
  EXPECT_EQ(formatAttr(2.0), "2.0");
  EXPECT_EQ(formatAttr(0.1), "0.1");
  EXPECT_EQ(formatAttr(-INFINITY), "-inf");
  EXPECT_EQ(formatAttr(std::string("lt")), "\"lt\"");
}

TEST(IRTest, TypeStrings) {
  EXPECT_EQ(F32.str(), "f32");
  EXPECT_EQ(Type::scalar(ScalarKind::F16).str(), "f16");
  EXPECT_EQ(Type::scalar(ScalarKind::BF16).str(), "bf16");
  EXPECT_EQ(Type::scalar(ScalarKind::I1).str(), "i1");
  EXPECT_EQ(Type::scalar(ScalarKind::I64).str(), "i64");
  EXPECT_EQ(PtrF32.str(), "ptr<f32>");
  EXPECT_EQ(BlockF32.str(), "block<128xf32>");
  EXPECT_EQ(BlockPtrF32.str(), "block<128xptr<f32>>");
  EXPECT_EQ(Type::block(Type::scalar(ScalarKind::F16), {4, 8}).str(), "block<4x8xf16>");

  EXPECT_TRUE(BlockPtrF32.isPtr());
  EXPECT_FALSE(BlockPtrF32.isFloat());
  EXPECT_EQ(BlockPtrF32.pointee(), BlockF32);
  EXPECT_EQ(BlockPtrF32.element(), PtrF32);
  EXPECT_EQ(BlockF32.withKind(ScalarKind::I1).str(), "block<128xi1>");
  EXPECT_EQ(Type::block(F32, {4, 8}).numElements(), 32);
  EXPECT_NE(BlockF32, BlockI32);
  EXPECT_NE(F32, PtrF32);
}

TEST(IRTest, ParseDtype) {
  EXPECT_EQ(parseDtype("fp32"), ScalarKind::F32);
  EXPECT_EQ(parseDtype("f32"), ScalarKind::F32);
  EXPECT_EQ(parseDtype("fp16"), ScalarKind::F16);
  EXPECT_EQ(parseDtype("f16"), ScalarKind::F16);
  EXPECT_EQ(parseDtype("bf16"), ScalarKind::BF16);
  EXPECT_EQ(parseDtype("i1"), ScalarKind::I1);
  EXPECT_EQ(parseDtype("i32"), ScalarKind::I32);
  EXPECT_EQ(parseDtype("i64"), ScalarKind::I64);
  for (const char *bad : {"", "fp64", "float", "*fp32", "I32", "i7", "fp32 "})
    EXPECT_EQ(parseDtype(bad), std::nullopt) << "'" << bad << "'";
  for (ScalarKind k : allScalarKinds()) {
    EXPECT_EQ(parseDtype(dtypeName(k)), k) << dtypeName(k);
    EXPECT_EQ(parseDtype(irName(k)), k) << irName(k);
  }
}

TEST(IRTest, VerifierAcceptsGoodIR) {
  Sample s = buildSample();
  EXPECT_EQ(verifyError(*s.fn), "");
}

TEST(IRTest, VerifierRejectsAddTypeMismatch) {
  Sample s = buildSample(true);
  s.add->setOperand(1, s.n); // i32 + block<128xf32>
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("IR verification failed after unit-test"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'add' at hand_written.cpp:13"), std::string::npos) << msg;
  EXPECT_NE(msg.find("binary op needs two operands of the result's type"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--- IR ---\nkernel @k("), std::string::npos) << msg; // carries the IR
}

TEST(IRTest, VerifierRejectsUseOfLoopValueAfterLoop) {
  Sample s = buildSample(true);
  // A value defined in the loop body, used after the loop: not dominated.
  Value *inside = s.loop->body()->ops().front()->result(); // the addptr in the body
  Builder b(&s.fn->body());
  b.create(OpKind::Store, {inside, s.reduce->result()}, {}, at(20));
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("'store' at hand_written.cpp:20"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SSA dominance"), std::string::npos) << msg;
}

TEST(IRTest, VerifierRejectsUseBeforeDefinition) {
  Sample s = buildSample(true);
  // The arange used by an op placed before it.
  Block &body = s.fn->body();
  auto op = std::make_unique<Op>(OpKind::Add,
                                 std::vector<Value *>{s.arange->result(), s.arange->result()},
                                 std::vector<Type>{BlockI32}, at(9));
  op->setParentBlock(&body);
  body.ops().push_front(std::move(op));
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("'add' at hand_written.cpp:9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SSA dominance"), std::string::npos) << msg;
}

TEST(IRTest, VerifierRejectsBodyWithoutYield) {
  Sample s = buildSample(true);
  s.loop->body()->ops().pop_back(); // the yield
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("'for' at hand_written.cpp:15"), std::string::npos) << msg;
  EXPECT_NE(msg.find("body does not end with 'yield'"), std::string::npos) << msg;
}

TEST(IRTest, VerifierRejectsStoreOfWrongElementType) {
  Sample s = buildSample(true);
  s.store->setOperand(1, s.loop->body()->argument(0)); // i32 through ptr<f32>
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("'store' at hand_written.cpp:16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("store(ptr, value[, mask]) types disagree"), std::string::npos) << msg;
}

TEST(IRTest, VerifierRejectsReduceWithWrongResultType) {
  Sample s = buildSample(true);
  s.reduce->result()->setType(BlockF32); // the axis must disappear
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("'reduce_sum' at hand_written.cpp:14"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reduction result type is wrong"), std::string::npos) << msg;
}

TEST(IRTest, VerifierRejectsReduceAxisOutOfRange) {
  Sample s = buildSample(true);
  s.reduce->setAttr("axis", int64_t(1));
  std::string msg = verifyError(*s.fn);
  EXPECT_NE(msg.find("reduction axis out of range"), std::string::npos) << msg;
}

TEST(IRTest, VerifierRequiresLayoutsOnlyWhenAsked) {
  Sample s = buildSample(true);
  std::string msg = verifyError(*s.fn, {.requireLayouts = true});
  EXPECT_NE(msg.find("'arange' at hand_written.cpp:10"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block value without a layout"), std::string::npos) << msg;

  // With a layout on every block value, the GIR check passes.
  Layout l = Layout::blocked({1}, {32}, {4});
  walk(s.fn->body(), [&](Op &op) {
    for (auto &r : op.results())
      if (r->type().isBlock())
        r->setLayout(l);
  });
  EXPECT_EQ(verifyError(*s.fn, {.requireLayouts = true}), "");
  EXPECT_EQ(verifyError(*s.fn), "");
}

TEST(IRTest, CSEMergesIdenticalAranges) {
  Function fn("k", SourceLoc());
  Value *out = fn.body().addArgument(Type::pointer(ScalarKind::I32), "out");
  Builder b(&fn.body());
  auto arange = [&] {
    Op *op = b.create(OpKind::Arange, {}, {BlockI32}, SourceLoc());
    op->setAttr("start", int64_t(0));
    op->setAttr("end", int64_t(128));
    return op->result();
  };
  Value *a = arange(), *c = arange();
  // A third arange with other bounds must stay.
  Op *other = b.create(OpKind::Arange, {}, {BlockI32}, SourceLoc());
  other->setAttr("start", int64_t(128));
  other->setAttr("end", int64_t(256));
  Value *sum = b.createValue(OpKind::Add, {a, c}, BlockI32, SourceLoc());
  Value *sum2 = b.createValue(OpKind::Add, {sum, other->result()}, BlockI32, SourceLoc());
  Value *ptrs = b.createValue(OpKind::Splat, {out}, Type::block(Type::pointer(ScalarKind::I32), {128}),
                              SourceLoc());
  Value *addrs = b.createValue(OpKind::AddPtr, {ptrs, a}, ptrs->type(), SourceLoc());
  b.create(OpKind::Store, {addrs, sum2}, {}, SourceLoc());
  ASSERT_EQ(verifyError(fn), "");
  ASSERT_EQ(countOps(fn, OpKind::Arange), 3u);

  eliminateCommonSubexpressions(fn);
  EXPECT_EQ(verifyError(fn), "");
  EXPECT_EQ(countOps(fn, OpKind::Arange), 2u) << print(fn);
  // The add now adds the surviving arange to itself.
  Op *add = nullptr;
  walk(fn.body(), [&](Op &op) {
    if (op.kind() == OpKind::Add && !add)
      add = &op;
  });
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->operand(0), add->operand(1)) << print(fn);
  EXPECT_EQ(add->operand(0), a);
  EXPECT_EQ(countOps(fn, OpKind::Store), 1u);
}

TEST(IRTest, CSEDoesNotMergeLoads) {
  Sample s = buildSample();
  Builder b(&s.fn->body());
  Op *load2 = b.create(OpKind::Load, {s.load->operand(0)}, {BlockF32}, SourceLoc());
  Value *r = b.createValue(OpKind::ReduceSum, {load2->result()}, F32, SourceLoc());
  r->definingOp()->setAttr("axis", int64_t(0));
  b.create(OpKind::Store, {s.out, r}, {}, SourceLoc());
  eliminateCommonSubexpressions(*s.fn);
  EXPECT_EQ(countOps(*s.fn, OpKind::Load), 2u) << print(*s.fn);
  EXPECT_EQ(verifyError(*s.fn), "");
}

TEST(IRTest, DCERemovesUnusedOpsButKeepsStores) {
  Sample s = buildSample();
  Builder b(&s.fn->body());
  // An unused pure chain and an unused load: all dead.
  Value *e = b.createValue(OpKind::Exp, {s.load->result()}, BlockF32, SourceLoc());
  b.createValue(OpKind::Neg, {e}, BlockF32, SourceLoc());
  b.create(OpKind::Load, {s.load->operand(0)}, {BlockF32}, SourceLoc());
  // A store whose value nothing else uses: kept.
  Value *c = b.constant(F32, 2.0, SourceLoc());
  b.create(OpKind::Store, {s.out, c}, {}, SourceLoc());
  ASSERT_EQ(verifyError(*s.fn), "");

  eliminateDeadCode(*s.fn);
  EXPECT_EQ(verifyError(*s.fn), "");
  EXPECT_EQ(countOps(*s.fn, OpKind::Exp), 0u) << print(*s.fn);
  EXPECT_EQ(countOps(*s.fn, OpKind::Neg), 0u) << print(*s.fn);
  EXPECT_EQ(countOps(*s.fn, OpKind::Load), 1u) << print(*s.fn);
  EXPECT_EQ(countOps(*s.fn, OpKind::Store), 2u) << print(*s.fn);
  EXPECT_EQ(countOps(*s.fn, OpKind::For), 1u);
  EXPECT_EQ(countOps(*s.fn, OpKind::Yield), 1u);
  // The original kernel had nothing dead: it prints as before, plus the new store.
  std::string expected = kSamplePrinted;
  expected.resize(expected.size() - 2); // the closing "}\n"
  expected += "  %12 = constant {value = 2.0} : f32\n  store %out, %12\n}\n";
  EXPECT_EQ(print(*s.fn), expected);
}

TEST(IRTest, DCEKeepsLoopWithStoreAndDropsDeadValuesInside) {
  Sample s = buildSample();
  // Insert a dead op before the yield.
  auto &ops = s.loop->body()->ops();
  auto dead = std::make_unique<Op>(OpKind::Mul,
                                   std::vector<Value *>{s.loop->body()->argument(0),
                                                        s.loop->body()->argument(0)},
                                   std::vector<Type>{I32}, SourceLoc());
  dead->setParentBlock(s.loop->body());
  ops.insert(std::prev(ops.end()), std::move(dead));
  ASSERT_EQ(countOps(*s.fn, OpKind::Mul), 1u);
  ASSERT_EQ(verifyError(*s.fn), "");
  eliminateDeadCode(*s.fn);
  EXPECT_EQ(countOps(*s.fn, OpKind::Mul), 0u);
  EXPECT_EQ(print(*s.fn), kSamplePrinted);
}
