// A user's AOT generator (tests/consumer, built by tools/ci-consumer.sh against an installed
// tritium): compiles two specializations of its own DSL kernel into scale.h and scale.cpp in
// the folder given as argv[1], a dispatcher over an aligned and an unaligned variant.
// tritium_add_aot_kernels (CMakeLists.txt) runs it at build time.
#include <tritium/aot/Aot.h>
#include <tritium/frontend/Tritium.h>

#include <cstdio>

using namespace tritium;
using namespace tritium::dsl;

void scale(Ptr out, Ptr x, Int n, Float a, int BLOCK) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask, 0.0) * a, mask);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: aot_generator OUTPUT_DIR\n");
    return 2;
  }
  auto k = kernel("scale_kernel", scale, {"out", "x", "n", "a", "BLOCK"});
  std::vector<aot::Variant> variants = {
      {.name = "scale_aligned",
       .kernel = &k,
       .spec = {.signature = {"*fp32:16", "*fp32:16", "i32:16", "fp32"}, .constexprs = {1024}},
       .grid = aot::GridRule::PerProgram},
      {.name = "scale_any",
       .kernel = &k,
       .spec = {.signature = {"*fp32", "*fp32", "i32", "fp32"}, .constexprs = {256}},
       .grid = aot::GridRule::PerProgram}};
  try {
    aot::writeFiles(aot::generate(variants, {.name = "scale", .generatedBy = "aot_generator"}),
                    argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "aot_generator: %s\n", e.what());
    return 1;
  }
  return 0;
}
