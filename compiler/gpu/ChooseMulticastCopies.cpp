// Which TMA copies are multicast over the cluster (GIR, after SpecializeWarps). A tile loaded
// with `desc.load(offsets, multicast)` is the same tile in every program of a cluster of C
// (the interpreter checks it), so each program's producer copies 1/C of its rows and TMA
// writes that slice into all C programs' shared memory (`.multicast::cluster`), at the same
// offset in each, completing on each program's own "full" mbarrier of the stage. The tile is
// then read from L2 once per cluster instead of C times. The descriptor's box is the slice:
//   load {tensor_map = i, multicast_copies = C}   the i-th recipe's last box side / C
// The lowering (codegen/LowerTensorCopy.cpp) makes the ring cluster-wide: a stage's "empty"
// mbarrier counts the compute warps of all C programs, each warp arriving on every program's
// (a program's producer writes into all of them), and the cluster meets at a barrier after the
// mbarriers' set-up and before they are retired. Where a multicast load cannot be one, it
// stays a copy of the whole tile per program, with the same results, and says why:
//   load {multicast_skipped = "reason"}
// It takes a warp-specialized ring (range(...).warp_specialize()): without a producer warp the
// ring's stages are released by a CTA barrier, which does not reach the other programs.
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <map>
#include <string>

namespace tritium {

namespace {

// Why `load`'s tile (recipe `r`) cannot be split into `ctas` slices, or "".
std::string whyNotSplit(const ir::TensorMapRecipe &r, int64_t ctas, int64_t bytes) {
  int64_t outer = r.box.back();
  bool permuted = r.box.size() == 4; // rows as (8, 2, groups of 16): slices of whole groups
  std::string unit = permuted ? " groups of 16 rows" : " rows";
  if (outer % ctas != 0)
    return "the tile's " + std::to_string(outer) + unit + " do not split into " +
           std::to_string(ctas) + " slices";
  int64_t slice = outer / ctas;
  // Each slice starts a whole swizzle pattern (8 rows) in, or on 128 bytes when unswizzled.
  if (r.swizzle > 0 && !permuted && slice % 8 != 0)
    return "a slice of " + std::to_string(slice) + " rows is not a multiple of the swizzle's 8";
  if (r.swizzle == 0 && slice * r.box[0] * bytes % 128 != 0)
    return "a slice of " + std::to_string(slice) + " rows does not start on 128 bytes";
  return "";
}

} // namespace

void chooseMulticastCopies(ir::Function &fn) {
  int64_t ctas = fn.intAttr("cluster_size").value_or(1);
  std::vector<ir::TensorMapRecipe> maps = ir::tensorMapsOf(fn);
  bool changed = false;
  std::map<size_t, size_t> sliced; // a recipe's index -> its slice's, once made
  ir::walk(fn.body(), [&](ir::Op &load) {
    if (load.kind() != ir::OpKind::Load || !load.hasAttr("multicast"))
      return;
    const ir::Op *loop = load.parentBlock()->parentOp();
    std::string why;
    if (ctas == 1)
      why = "the kernel has no clusters (cluster size 1)";
    else if (!load.hasAttr("tensor_map"))
      why = "the tile is not a TMA copy of a pipelined loop's ring";
    else if (!loop || !loop->hasAttr("warp_specialized"))
      why = "its ring has no producer warp group (range(...).warp_specialize())";
    else
      why = whyNotSplit(maps.at(size_t(load.intAttr("tensor_map"))), ctas,
                        ir::byteWidth(load.result()->type().kind()));
    if (!why.empty()) {
      load.setAttr("multicast_skipped", why);
      return;
    }
    size_t index = size_t(load.intAttr("tensor_map"));
    load.setAttr("multicast_copies", ctas);
    changed = true;
    if (auto it = sliced.find(index); it != sliced.end()) {
      load.setAttr("tensor_map", int64_t(it->second));
      return;
    }
    size_t original = index;
    ir::TensorMapRecipe slice = maps[index];
    slice.box.back() /= ctas;
    // The recipe in place where no other op uses it; else a recipe of its own.
    bool shared = false;
    ir::walk(fn.body(), [&](ir::Op &other) {
      shared = shared || (&other != &load && other.hasAttr("tensor_map") &&
                          size_t(other.intAttr("tensor_map")) == index);
    });
    if (shared) {
      auto it = std::find(maps.begin(), maps.end(), slice);
      index = size_t(it - maps.begin());
      if (it == maps.end())
        maps.push_back(slice);
    } else {
      maps[index] = slice;
    }
    load.setAttr("tensor_map", int64_t(index));
    sliced[original] = index;
  });
  if (changed)
    fn.setAttr("tensor_maps", ir::printTensorMaps(maps));
}

} // namespace tritium
