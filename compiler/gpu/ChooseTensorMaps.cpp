// Which tiles TMA copies (GIR, after FeedDotsFromRings): a 2-D load traced from a tensor
// descriptor (ir/TensorMap.h) that a cp.async ring brings in becomes one
// cp.async.bulk.tensor per stage, issued by one thread and completing on the stage's
// mbarrier, where TMA can take the descriptor:
//   load {tensor_map = i}                 the kernel's i-th CUtensorMap, in {tensor_maps}
//   for  {tensor_barriers = O}            one mbarrier per stage, from byte O
// The CUtensorMap is encoded by the launch from the kernel's arguments (TensorMapRecipe), so
// the base must be a pointer argument specialized as 16-byte aligned, the shape's and the row
// stride's numbers arguments, constants or an argument times a constant (SwiGLU's 2 x N
// columns), and the row stride a multiple of 16 bytes (an argument specialized as divisible
// by 16). TMA writes the tile where the ring's readers look for it:
//   - a tile read in registers: the box is the tile, row-major, unswizzled;
//   - a tile a dot reads in place ({swizzle}): boxes of 128 bytes of columns with
//     SWIZZLE_128B, one per panel (codegen dotTileOffset), or rows of 64 or 32 bytes with
//     SWIZZLE_64B or SWIZZLE_32B; a wgmma's a ({permute_rows = 1}) is
//     described as four dimensions, the rows split as (8 rows 2 apart, 2 rows 1 apart, groups
//     of 16), so that TMA places row 2j + h of each 16 at row j + 8h; the b of a dot whose
//     accumulator is an 8-bit fragment ({permute_rows = 2}, ByteFragmentColumns.cpp) as five,
//     (2 rows 1 apart, 4 rows 4 apart, 2 rows 2 apart, groups of 16), so that row
//     4c + 2j + h sits at 8j + 2c + h. Both take the tensor's row count and the tile's row
//     offset as multiples of 16.
// Any other load stays as it is, with the same results.
#include "compiler/analysis/AxisInfo.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/TensorMap.h"

#include <algorithm>

namespace tritium {

namespace {

int64_t alignTo(int64_t bytes, int64_t align) { return (bytes + align - 1) / align * align; }

// The kernel argument index of `v` (looking through integer widening), or -1.
int argumentIndex(const ir::Function &fn, const ir::Value *v) {
  while (const ir::Op *def = v->definingOp()) {
    if (def->kind() != ir::OpKind::Cast || !def->operand(0)->type().isInt())
      return -1;
    v = def->operand(0);
  }
  const auto &args = fn.body().arguments();
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].get() == v)
      return int(i);
  return -1;
}

std::optional<int64_t> constantOf(const ir::Value *v) {
  const ir::Op *def = v->definingOp();
  while (def && def->kind() == ir::OpKind::Cast) {
    v = def->operand(0);
    def = v->definingOp();
  }
  if (!def || def->kind() != ir::OpKind::Constant ||
      !std::holds_alternative<int64_t>(def->attr("value")))
    return std::nullopt;
  return std::get<int64_t>(def->attr("value"));
}

// A term for `v`, if it is an argument or a constant, with the divisibility known of it.
struct Known {
  ir::TensorMapTerm term;
  int64_t divisibility = 1;
};
std::optional<Known> known(const ir::Function &fn, const ir::Value *v) {
  if (std::optional<int64_t> c = constantOf(v)) {
    Known k;
    k.term.scale = *c;
    k.divisibility = *c == 0 ? int64_t(1) << 30 : *c & -*c;
    return k;
  }
  int arg = argumentIndex(fn, v);
  if (arg < 0) {
    // An argument times a constant (SwiGLU's two halves of B: 2 x N columns).
    const ir::Op *def = v->definingOp();
    while (def && def->kind() == ir::OpKind::Cast && def->operand(0)->type().isInt())
      def = def->operand(0)->definingOp();
    if (def && def->kind() == ir::OpKind::Mul)
      for (unsigned i : {0u, 1u})
        if (std::optional<int64_t> c = constantOf(def->operand(1 - i)); c && *c > 0)
          if (argumentIndex(fn, def->operand(i)) >= 0) {
            std::optional<Known> k = known(fn, def->operand(i));
            k->term.scale *= *c;
            k->divisibility *= *c & -*c;
            return k;
          }
    return std::nullopt;
  }
  Known k;
  k.term.arg = arg;
  k.divisibility = std::max(1, fn.body().argument(unsigned(arg))->divisibility());
  return k;
}

ir::TensorMapTerm scaled(ir::TensorMapTerm t, int64_t scale, int64_t divisor = 1) {
  t.scale *= scale;
  t.divisor *= divisor;
  return t;
}

// The recipe for `load`, or nullopt where TMA cannot take it.
std::optional<ir::TensorMapRecipe> recipeFor(const ir::Function &fn, const ir::Op &load,
                                             const AxisAnalysis &axis) {
  if (ir::tensorRank(load) != 2 || load.kind() != ir::OpKind::Load ||
      load.hasAttr("resident") || !load.hasAttr("pipelined"))
    return std::nullopt;
  const ir::Type &t = load.result()->type();
  int64_t bytes = ir::byteWidth(t.kind()), rows = t.shape()[0], cols = t.shape()[1];
  if (!load.hasAttr("swizzle")) // read in registers, row-major
    return tensorTileRecipe(fn, load, t, 0);
  int64_t span = dotSwizzleBytes(cols * bytes); // 128-byte panels, or one of 64 or 32 bytes
  if (span == 0)
    return std::nullopt;
  std::optional<ir::TensorMapRecipe> r = tensorTileRecipe(fn, load, t, span);
  if (!r || !load.hasAttr("permute_rows"))
    return r;
  std::optional<Known> height = known(fn, ir::tensorShape(load, 0)),
                       stride = known(fn, ir::tensorStride(load, 0));
  if (rows % 16 != 0 || height->divisibility % 16 != 0 ||
      axis.get(ir::tensorOffset(load, 0)).divisibility[0] % 16 != 0)
    return std::nullopt;
  ir::TensorMapTerm rowBytes = scaled(stride->term, bytes);
  ir::TensorMapTerm groups = scaled(height->term, 1, 16);
  if (groups.arg < 0)
    groups = ir::TensorMapTerm{-1, height->term.scale / 16, 1};
  auto n = [](int64_t v) { return ir::TensorMapTerm{-1, v, 1}; };
  if (rowOrderOf(load) == RowOrder::WgmmaA) { // (column, 8 rows 2 apart, 2 rows, groups of 16)
    r->dims = {r->dims[0], n(8), n(2), groups};
    r->strides = {scaled(rowBytes, 2), rowBytes, scaled(rowBytes, 16)};
    r->box = {r->box[0], 8, 2, rows / 16};
  } else { // (column, 2 rows, 4 rows 4 apart, 2 rows 2 apart, groups of 16)
    r->dims = {r->dims[0], n(2), n(4), n(2), groups};
    r->strides = {rowBytes, scaled(rowBytes, 4), scaled(rowBytes, 2), scaled(rowBytes, 16)};
    r->box = {r->box[0], 2, 4, 2, rows / 16};
  }
  return r;
}

} // namespace

std::optional<ir::TensorMapRecipe> tensorTileRecipe(const ir::Function &fn, const ir::Op &op,
                                                    const ir::Type &tile, int64_t span) {
  if (ir::tensorRank(op) != 2 || tile.rank() != 2)
    return std::nullopt;
  int64_t bytes = ir::byteWidth(tile.kind()), rows = tile.shape()[0], cols = tile.shape()[1];
  if (tile.kind() == ir::ScalarKind::I1 || bytes > 8 || rows > 256 || cols > 256 ||
      cols * bytes % 16 != 0 || (span && span != dotSwizzleBytes(cols * bytes)))
    return std::nullopt;
  int base = argumentIndex(fn, ir::tensorBase(op));
  if (base < 0 || fn.body().argument(unsigned(base))->divisibility() < 16)
    return std::nullopt;
  std::optional<Known> height = known(fn, ir::tensorShape(op, 0)),
                       width = known(fn, ir::tensorShape(op, 1)),
                       stride = known(fn, ir::tensorStride(op, 0));
  if (!height || !width || !stride || stride->divisibility * bytes % 16 != 0)
    return std::nullopt;
  ir::TensorMapRecipe r;
  r.baseArg = base;
  r.dtype = tile.kind();
  r.dims = {width->term, height->term};
  r.strides = {scaled(stride->term, bytes)};
  r.box = {span ? span / bytes : cols, rows};
  r.swizzle = span;
  return r;
}

void chooseTensorMaps(ir::Function &fn, bool allowed, int64_t maxSharedBytes) {
  if (!allowed)
    return;
  AxisAnalysis axis(fn);
  std::vector<ir::TensorMapRecipe> maps = ir::tensorMapsOf(fn); // tensor_stores' come first
  int64_t end = fn.intAttr("shared_bytes").value_or(0);
  ir::walk(fn.body(), [&](ir::Op &loop) {
    if (loop.kind() != ir::OpKind::For || !loop.hasAttr("pipeline_stages") ||
        loop.hasAttr("bulk_barriers"))
      return;
    std::vector<std::pair<ir::Op *, ir::TensorMapRecipe>> chosen;
    for (auto &op : loop.body()->ops())
      if (std::optional<ir::TensorMapRecipe> r = recipeFor(fn, *op, axis))
        chosen.emplace_back(op.get(), *r);
    int64_t stages = loop.intAttr("pipeline_stages");
    int64_t barriers = alignTo(end, 8);
    if (chosen.empty())
      return;
    if (barriers + 8 * stages > maxSharedBytes) // the tiles stay cp.async copies
      return;
    for (auto &[load, recipe] : chosen) {
      auto it = std::find(maps.begin(), maps.end(), recipe);
      if (it == maps.end())
        it = maps.insert(maps.end(), recipe);
      load->setAttr("tensor_map", int64_t(it - maps.begin()));
    }
    loop.setAttr("tensor_barriers", barriers);
    end = barriers + 8 * stages;
  });
  if (maps.empty())
    return;
  fn.setAttr("shared_bytes", end);
  fn.setAttr("tensor_maps", ir::printTensorMaps(maps));
}

} // namespace tritium
