// Writes tiled_scale.{h,cpp}, the AOT consumer's kernel whose tiles are read and written through
// tensor descriptors: on sm_90a a TMA copy per ring stage and a TMA store, so its launchers
// encode two CUtensorMaps from their arguments (docs/AOT.md, "Tensor maps"). tritiumc's
// built-in kernels have no descriptors, hence this small generator, run at build time beside
// generate.sh. Usage: aot_descriptor_generator OUTPUT_DIR
#include "aot/Aot.h"
#include "compiler/support/Error.h"
#include "frontend/Tritium.h"

#include <cstdio>
#include <exception>

using namespace tritium;
using namespace tritium::dsl;

namespace {

// out = 2 x in over a rows x cols fp32 tensor: program p walks the rows of columns
// [p x BC, (p + 1) x BC) in BR-row tiles; TMA clips the last tiles at the tensor's edges.
void tiled_scale(Ptr out, Ptr in, Int rows, Int cols, int BR, int BC) {
  auto src = make_tensor_descriptor(in, {rows, cols}, {cols, 1}, {BR, BC});
  auto dst = make_tensor_descriptor(out, {rows, cols}, {cols, 1}, {BR, BC});
  for (auto r : range(0, rows, BR, 3))
    dst.store({r, program_id(0) * BC}, src.load({r, program_id(0) * BC}) * 2.0);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: aot_descriptor_generator OUTPUT_DIR\n");
    return 2;
  }
  try {
    static auto k = kernel("tiled_scale", tiled_scale, {"out", "in", "rows", "cols", "BR", "BC"});
    aot::Variant v{.name = "tiled_scale",
                   .kernel = &k,
                   .spec = {.signature = {"*fp32:16", "*fp32:16", "i32", "i32:16"},
                            .constexprs = {32, 64},
                            .arch = "sm_90a"},
                   .grid = aot::GridRule::PerProgram};
    aot::writeFiles(aot::generate({v}, {.name = "tiled_scale",
                                        .generatedBy = "tests/aot_consumer/generate_descriptor.cpp"}),
                    argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "aot_descriptor_generator: %s\n", e.what());
    return 1;
  }
  return 0;
}
