// Which tiles TMA writes (TIR, before layout assignment): a 2-D tile stored through a tensor
// descriptor (compiler/ir/TensorMap.h), or combined into it by a descriptor atomic whose old
// values nobody reads, becomes
//   tensor_store(value, base, shape, strides, offsets) {tensor_map = i[, reduce = op]}
// where TMA can take the descriptor (tensorTileRecipe: the conditions of a load's copy) and,
// for an atomic, has the reduction for its type (cp.reduce.async.bulk.tensor: add of f32, f16,
// bf16 and 32-bit integers; min and max of 32-bit integers; and, or and xor of 32- and 64-bit
// integers), where the tile's column offset and the tensor's width are known to lie on 16
// bytes. The lowering (codegen/LowerTensorStore.cpp) writes the tile to a staging buffer
// in TMA's swizzled form (panels of 128 bytes of columns with SWIZZLE_128B, rows of 64 or 32
// bytes with SWIZZLE_64B / SWIZZLE_32B, other rows unswizzled) from whatever layout the value
// has, so a tensor_store anchors no layout: a matmul's epilogue stays in the accumulator's
// layout, where an element store would have converted it to the pointers' (through a staging
// buffer of its own). Tiles of more than kMaxStagingBytes stay element stores, as does any
// other store, with the same results.
#include "compiler/analysis/AxisInfo.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/transforms/Passes.h"

#include <algorithm>
#include <unordered_set>

namespace tritium {

namespace {

// A 128 x 256 tile of 16-bit elements: a matmul's widest plan.
constexpr int64_t kMaxStagingBytes = 64 * 1024;

// The TMA reduction of a descriptor atomic of `kind` on `op`, or "" where TMA has none.
std::string tmaReduction(const std::string &op, ir::ScalarKind kind) {
  using K = ir::ScalarKind;
  bool int32 = kind == K::I32 || kind == K::U32;
  if (op == "add" && (int32 || kind == K::F32 || kind == K::F16 || kind == K::BF16))
    return op;
  if ((op == "min" || op == "max") && int32)
    return op;
  if ((op == "and" || op == "or" || op == "xor") && (int32 || kind == K::I64 || kind == K::U64))
    return op;
  return "";
}

int64_t tileBytes(const ir::Type &t) { return t.numElements() * ir::byteWidth(t.kind()); }

} // namespace

void chooseTensorStores(ir::Function &fn, bool allowed) {
  if (!allowed || fn.intAttr("programs_per_cta").value_or(1) > 1)
    return;
  std::unordered_set<const ir::Value *> used;
  ir::walk(fn.body(), [&](ir::Op &op) {
    for (const ir::Value *v : op.operands())
      used.insert(v);
  });
  std::vector<ir::TensorMapRecipe> maps = ir::tensorMapsOf(fn);
  AxisAnalysis axis(fn);
  bool changed = false;
  auto visit = [&](auto &&self, ir::Block &block) -> void {
    for (auto &slot : block.ops()) {
      ir::Op &op = *slot;
      for (unsigned r = 0; r < op.numRegions(); ++r)
        self(self, *op.region(r));
      bool atomic = op.kind() == ir::OpKind::AtomicRMW;
      if (ir::tensorRank(op) != 2 || (op.kind() != ir::OpKind::Store && !atomic))
        continue;
      ir::Value *value = op.operand(1);
      const ir::Type &t = value->type();
      std::string reduce;
      if (atomic) {
        reduce = tmaReduction(op.strAttr("op"), t.kind());
        if (reduce.empty() || used.count(op.result()) || op.strAttr("sem") != "relaxed")
          continue;
      }
      // What the H200 showed: a tile whose columns start off 16 bytes stops the kernel with an
      // illegal instruction (f32 additions at column offset 7; 4 and 8 run), as does any
      // negative offset (the lowering goes element by element there); and a TMA store writes
      // whole 16-byte pieces of a row past the tensor's last column (f32 columns 90 and 91
      // of rows 96 long, the tensor 90 wide). So the column offset and the width must be
      // known to lie on 16 bytes.
      int64_t bytes = ir::byteWidth(t.kind());
      if (axis.get(ir::tensorOffset(op, 1)).divisibility[0] * bytes % 16 != 0 ||
          axis.get(ir::tensorShape(op, 1)).divisibility[0] * bytes % 16 != 0)
        continue;
      if (!t.isBlock() || t.rank() != 2)
        continue;
      int64_t rowBytes = t.shape()[1] * ir::byteWidth(t.kind());
      int64_t span = dotSwizzleBytes(rowBytes);
      // Panels after the first start where the 128-byte swizzle's 8-row pattern does.
      if (rowBytes > 128 && t.shape()[0] % 8 != 0)
        continue;
      std::optional<ir::TensorMapRecipe> recipe = tensorTileRecipe(fn, op, t, span);
      if (!recipe)
        continue;
      if (tileBytes(t) > kMaxStagingBytes)
        continue;
      auto it = std::find(maps.begin(), maps.end(), *recipe);
      if (it == maps.end())
        it = maps.insert(maps.end(), *recipe);
      std::vector<ir::Value *> operands{value};
      for (unsigned i = 3; i < op.numOperands(); ++i)
        operands.push_back(op.operand(i));
      auto store = std::make_unique<ir::Op>(ir::OpKind::TensorStore, operands,
                                            std::vector<ir::Type>{}, op.loc());
      store->setParentBlock(&block);
      store->setAttr("tensor_rank", int64_t(2));
      store->setAttr("tensor_map", int64_t(it - maps.begin()));
      if (atomic)
        store->setAttr("reduce", reduce);
      slot = std::move(store);
      changed = true;
    }
  };
  visit(visit, fn.body());
  if (!changed)
    return;
  // The pointers and masks that only the replaced ops read.
  eliminateDeadCode(fn);
  fn.setAttr("tensor_maps", ir::printTensorMaps(maps));
}

} // namespace tritium
