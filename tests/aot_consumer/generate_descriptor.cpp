// Writes tiled_scale.{h,cpp}, the AOT consumer's kernel whose tiles are read and written through
// tensor descriptors: on sm_90a a TMA copy per ring stage and a TMA store, so its launchers
// encode two CUtensorMaps from their arguments (docs/AOT.md, "Tensor maps"). tritiumc's
// built-in kernels have no descriptors, hence this small generator, run at build time beside
// generate.sh. Usage: aot_descriptor_generator OUTPUT_DIR
#include "TiledScaleKernel.h"
#include "aot/Aot.h"
#include "compiler/support/Error.h"

#include <cstdio>
#include <exception>

using namespace tritium;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: aot_descriptor_generator OUTPUT_DIR\n");
    return 2;
  }
  try {
    static auto k = kernel("tiled_scale", aot_consumer::tiled_scale,
                           {"out", "in", "rows", "cols", "BR", "BC"});
    aot::Variant v{.name = "tiled_scale",
                   .kernel = &k,
                   .spec = {.signature = {"*fp32:16", "*fp32:16", "i32", "i32:16"},
                            .constexprs = {32, 64},
                            .arch = "sm_90a"},
                   .grid = aot::GridRule::PerProgram};
    aot::Options options{.name = "tiled_scale",
                         .generatedBy = "tests/aot_consumer/generate_descriptor.cpp"};
    aot::writeFiles(aot::generate({v}, options), argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "aot_descriptor_generator: %s\n", e.what());
    return 1;
  }
  return 0;
}
