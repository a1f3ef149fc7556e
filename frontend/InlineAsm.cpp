// inline_asm_elementwise (Triton's tl.inline_asm_elementwise): PTX applied element by element to
// blocks broadcast to one shape, `pack` elements per asm call. The constraint string and the asm's
// operand references are checked here, at the caller's line, by the rules the verifier and the
// lowering share (compiler/ir/InlineAsmRules.h).
#include "compiler/ir/InlineAsmRules.h"
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

namespace tritium::dsl {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;

Group inline_asm_elementwise(const std::string &asm_text, const std::string &constraints,
                             const std::vector<Operand> &args, const std::vector<DType> &dtypes,
                             bool is_pure, int pack, Loc l) {
  SourceLoc loc(l);
  auto &b = Tracer::current(loc).builder();
  const std::string what = "inline_asm_elementwise";
  if (args.empty())
    userError(what + " needs at least one argument (its results take the arguments' shape)",
              loc);
  // Literals become scalars as Triton's do (i32, or i64 when they do not fit; f32); blocks and
  // scalars broadcast to one shape.
  std::vector<ir::Value *> values;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < args.size(); ++i) {
    const Operand &x = args[i];
    ir::Value *v = x.value;
    if (x.kind == Operand::Kind::Int)
      v = materialize(b, x, Type::scalar(ir::literalFits(x.i, ScalarKind::I32) ? ScalarKind::I32
                                                                                : ScalarKind::I64),
                      loc);
    else if (x.kind == Operand::Kind::Float)
      v = materialize(b, x, Type::scalar(ScalarKind::F32), loc);
    if (!v)
      userError(what + ": argument " + std::to_string(i) + " is an empty value", loc);
    if (v->type().isBlock())
      shape = broadcastShapes(shape, v->type().shape(), what, loc);
    values.push_back(v);
  }
  std::vector<Type> argTypes, resultTypes;
  for (ir::Value *&v : values) {
    if (!shape.empty())
      v = broadcastTo(b, v, shape, what, loc);
    argTypes.push_back(v->type().element());
  }
  for (const DType &d : dtypes)
    resultTypes.push_back(Type::scalar(d.kind));
  std::string why = ir::asmError(asm_text, constraints, argTypes, resultTypes, pack);
  if (!why.empty())
    userError(what + ": " + why, loc);
  std::vector<Type> results;
  for (const Type &t : resultTypes)
    results.push_back(shape.empty() ? t : Type::block(t, shape));
  ir::Op *op = b.create(OpKind::InlineAsm, values, results, loc);
  op->setAttr("asm", asm_text);
  op->setAttr("constraints", constraints);
  op->setAttr("pack", int64_t(pack));
  op->setAttr("pure", int64_t(is_pure));
  Group out;
  for (unsigned i = 0; i < op->numResults(); ++i)
    out.emplace_back(op->result(i));
  return out;
}

Value inline_asm_elementwise(const std::string &asm_text, const std::string &constraints,
                             const std::vector<Operand> &args, DType dtype, bool is_pure, int pack,
                             Loc l) {
  return inline_asm_elementwise(asm_text, constraints, args, std::vector<DType>{dtype}, is_pure,
                                pack, l)[0];
}

} // namespace tritium::dsl
