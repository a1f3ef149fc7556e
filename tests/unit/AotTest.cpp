// Ahead-of-time launchers (aot/Aot.h) without a GPU: the generated text is the same on every
// run and names where it came from, the launcher checks the ':16' marks and conditions, the
// dispatcher tries variants in the order given, the files compile against cuda.h alone (C++ for
// the source, C for the header), a header from another run is refused at compile time, and
// mistakes are UserErrors that name the variant and the mistake. The launchers' behaviour on a
// GPU is tests/aot_consumer's (tools/ci-aot.sh).
#include "TestSupport.h"
#include "aot_consumer/TiledScaleKernel.h"

#include "aot/Aot.h"
#include "aot/CText.h"
#include "aot/Ptxas.h"
#include "compiler/support/Error.h"
#include "frontend/Tritium.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace tritium;
using namespace tritium::dsl;

namespace {

void scale_kernel(Ptr out, Ptr x, Int n, Float factor, int BLOCK) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  store(out + offs, cast(load(x + offs, mask, 0.0) * factor, out.dtype()), mask);
}

Kernel &scaleKernel() {
  static auto k = kernel("scale_kernel", scale_kernel, {"out", "x", "n", "factor", "BLOCK"});
  return k;
}

aot::Variant variant(const std::string &name, std::vector<std::string> signature,
                     int64_t block = 256, std::vector<aot::Condition> when = {}) {
  return aot::Variant{.name = name,
                      .kernel = &scaleKernel(),
                      .spec = {.signature = std::move(signature), .constexprs = {block}},
                      .when = std::move(when),
                      .grid = aot::GridRule::PerProgram};
}

bool havePtxas() { return !tritium::testing::ptxasPath().empty(); }

#define REQUIRE_PTXAS()                                                                           \
  if (!havePtxas())                                                                               \
  GTEST_SKIP() << "ptxas was not found at configure time; AOT files need it for the cubin"

// Runs the test with TRITIUM_PTXAS set to `value` (unset for nullopt), then restores it.
struct ScopedPtxasEnv {
  std::optional<std::string> old;
  explicit ScopedPtxasEnv(const std::optional<std::string> &value) {
    if (const char *o = std::getenv("TRITIUM_PTXAS"))
      old = o;
    value ? ::setenv("TRITIUM_PTXAS", value->c_str(), 1) : ::unsetenv("TRITIUM_PTXAS");
  }
  ~ScopedPtxasEnv() {
    old ? ::setenv("TRITIUM_PTXAS", old->c_str(), 1) : ::unsetenv("TRITIUM_PTXAS");
  }
};

aot::GeneratedFiles generateScale(const std::vector<aot::Variant> &variants,
                                  const std::string &name) {
  return aot::generate(variants, {.name = name, .ptxas = tritium::testing::ptxasPath(),
                                  .generatedBy = "AotTest"});
}

void expectUserError(const std::function<void()> &f, const std::vector<std::string> &needles) {
  try {
    f();
    ADD_FAILURE() << "no UserError was thrown";
  } catch (const UserError &e) {
    for (const std::string &n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "'" << n << "' is not in: " << e.what();
  }
}

size_t countOf(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

// Compiles `file` in `dir` with the system's compiler against cuda.h only; "" or the errors.
std::string compileOnly(const std::filesystem::path &dir, const std::string &file, bool asC) {
  std::string cmd = std::string(asC ? "cc -std=c11 -x c" : "c++ -std=c++17") +
                    " -fsyntax-only -Wall -Werror -I'" TRITIUM_CUDA_INCLUDE "' -I'" +
                    dir.string() + "' '" + (dir / file).string() + "' 2>&1";
  FILE *p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = ::pclose(p);
  return status == 0 ? "" : "$ " + cmd + "\n" + out;
}

} // namespace

TEST(AotTextTest, ByteArraysAndStringLiteralsAreStableAndEscaped) {
  EXPECT_EQ(aot::byteArrayBody(std::string("\x00\x7f\xff", 3)), "  0x00, 0x7f, 0xff,\n");
  std::string sixteen(17, 'A');
  EXPECT_EQ(aot::byteArrayBody(sixteen),
            "  0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, "
            "0x41, 0x41, 0x41,\n  0x41,\n");
  EXPECT_EQ(aot::stringLiteralLines("a\t\"b\\\"\n?" "?=\n", "  "),
            "  \"a\\t\\\"b\\\\\\\"\\n\"\n  \"\\?\\?=\\n\"\n");
  EXPECT_TRUE(aot::isCIdentifier("softmax_fp32_1024"));
  EXPECT_FALSE(aot::isCIdentifier("1024_softmax"));
  EXPECT_FALSE(aot::isCIdentifier("soft-max"));
}

TEST(AotConditionTest, ParsesAndRefusesWithTheText) {
  aot::Condition c = aot::Condition::parse("n_cols<=1024");
  EXPECT_EQ(c.arg, "n_cols");
  EXPECT_EQ(c.op, "<=");
  EXPECT_EQ(c.value, 1024);
  EXPECT_EQ(aot::Condition::parse(" n > -3 ").str(), "n > -3");
  EXPECT_EQ(aot::Condition::parse("n!=0").op, "!=");
  expectUserError([] { aot::Condition::parse("n_cols 1024"); }, {"'n_cols 1024'", "no comparison"});
  expectUserError([] { aot::Condition::parse("n=4"); }, {"'=' is not a comparison"});
  expectUserError([] { aot::Condition::parse("n<=x"); }, {"'x' is not a 64-bit integer"});
  expectUserError([] { aot::Condition::parse("2<=4"); }, {"'2' is not an argument name"});
}

TEST(AotPtxasTest, ReportNumbersAreTheEntrysOwn) {
  aot::PtxasResult r;
  aot::parseReport("ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
                   "ptxas info    : Used 99 registers\n"
                   "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                   "ptxas info    : Function properties for k\n"
                   "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                   "ptxas info    : Used 40 registers, used 1 barriers, 16 bytes smem, 400 bytes "
                   "cmem[0]\n",
                   "k", r);
  EXPECT_EQ(r.registers, 40);
  EXPECT_EQ(r.stackBytes, 8);
  EXPECT_EQ(r.spillStoreBytes, 4);
  EXPECT_EQ(r.spillLoadBytes, 12);
  EXPECT_EQ(r.staticSharedBytes, 16);
}

TEST(AotPtxasTest, MissingPtxasNamesWhatWasSearched) {
  ScopedPtxasEnv env(std::string("/nonexistent/tritium-test/ptxas"));
  expectUserError([] { aot::findPtxas(); },
                  {"TRITIUM_PTXAS names '/nonexistent/tritium-test/ptxas'", "not an executable"});
  tritium::testing::ScopedCacheDir cache;
  expectUserError(
      [] {
        aot::generate({variant("scale", {"*fp32", "*fp32", "i32", "fp32"})}, {.name = "scale"});
      },
      {"TRITIUM_PTXAS", "/nonexistent/tritium-test/ptxas"});
}

TEST(AotGenerateTest, TextIsStableAndRecordsItsProvenance) {
  REQUIRE_PTXAS();
  tritium::testing::ScopedCacheDir cache;
  std::vector<aot::Variant> v = {variant("scale_f32", {"*fp32:16", "*fp32:16", "i32:16", "fp32"},
                                         256, {aot::Condition::parse("n<=1048576")})};
  aot::GeneratedFiles a = generateScale(v, "scale_f32");
  aot::GeneratedFiles b = generateScale(v, "scale_f32");
  EXPECT_EQ(a.header, b.header);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.headerName, "scale_f32.h");
  EXPECT_EQ(a.sourceName, "scale_f32.cpp");

  const std::string &s = a.source, &h = a.header;
  for (const char *needle :
       {"generated by tritium " TRITIUM_VERSION, "Generated by: AotTest", "Cubins by ptxas: ",
        "scale_f32: kernel scale_kernel", "  kernel hash     ", "  cache key       ",
        "  specialization  signature=*fp32:16,*fp32:16,i32:16,fp32;constexprs=256;num_warps=4",
        "  constexprs      BLOCK=256", "  target          sm_90 cubin; PTX ISA 8.1 fallback",
        "grid rule per_program", "  conditions      n <= 1048576", "  cubin           ",
        "cannot disagree", ".visible .entry scale_kernel"})
    EXPECT_NE(s.find(needle), std::string::npos) << needle;
  for (const char *needle :
       {"#define scale_f32_TRITIUM_VERSION \"" TRITIUM_VERSION "\"", "#define scale_f32_AOT_STAMP 0x",
        "#define scale_f32_ARCH \"sm_90\"", "#define scale_f32_THREADS 128",
        "#define scale_f32_GRID_RULE \"per_program\"",
        "CUresult scale_f32(CUstream stream, int64_t programs, CUdeviceptr out, CUdeviceptr x, "
        "int32_t n, float factor);",
        "CUresult scale_f32_grid(CUstream stream, uint32_t grid_x, uint32_t grid_y, uint32_t "
        "grid_z, CUdeviceptr out, CUdeviceptr x, int32_t n, float factor);",
        "const char *scale_f32_last_error(void);"})
    EXPECT_NE(h.find(needle), std::string::npos) << needle;
  // The checks the launcher makes before it touches the driver.
  EXPECT_NE(s.find("if (out % 16 != 0)"), std::string::npos);
  EXPECT_NE(s.find("argument 0 ('out') was specialized as 16-byte aligned (*fp32:16)"),
            std::string::npos);
  EXPECT_NE(s.find("if (n % 16 != 0)"), std::string::npos);
  EXPECT_NE(s.find("argument 2 ('n') was specialized as divisible by 16 (i32:16)"),
            std::string::npos);
  EXPECT_NE(s.find("if (!(n <= 1048576LL))"), std::string::npos);
  EXPECT_EQ(countOf(s, "% 16 != 0"), 3u); // out, x, n; not factor
  // Nothing that differs between machines: no path of this checkout, no time.
  std::string here = std::filesystem::path(__FILE__).parent_path().parent_path().string();
  EXPECT_EQ(s.find(here), std::string::npos);
  EXPECT_EQ(h.find(here), std::string::npos);
  EXPECT_EQ(s.find(tritium::testing::ptxasPath()), std::string::npos);
  // One variant named as the file: no dispatcher.
  EXPECT_EQ(h.find("launches the first variant"), std::string::npos);
}

TEST(AotGenerateTest, FilesCompileAgainstCudaHAloneAndRefuseAnotherRunsHeader) {
  REQUIRE_PTXAS();
  tritium::testing::ScopedCacheDir cache;
  tritium::testing::ScopedTempDir dir("tritium-aot-test");
  aot::GeneratedFiles f = generateScale(
      {variant("scale_f32", {"*fp32:16", "*fp32:16", "i32", "fp32"}),
       variant("scale_f16", {"*fp16", "*fp16", "i32", "fp32"}, 512)},
      "scale");
  aot::writeFiles(f, dir.path());
  EXPECT_EQ(compileOnly(dir.path(), "scale.cpp", false), "");
  {
    std::ofstream c(dir.path() / "use_header.c");
    c << "#include \"scale.h\"\nint main(void) { return scale_last_error() != 0 ? 0 : 1; }\n";
  }
  EXPECT_EQ(compileOnly(dir.path(), "use_header.c", true), "");

  // A header from another run (here: another BLOCK) does not compile with this source.
  aot::GeneratedFiles other = generateScale(
      {variant("scale_f32", {"*fp32:16", "*fp32:16", "i32", "fp32"}, 1024),
       variant("scale_f16", {"*fp16", "*fp16", "i32", "fp32"}, 512)},
      "scale");
  ASSERT_NE(other.header, f.header);
  {
    std::ofstream h(dir.path() / "scale.h", std::ios::binary);
    h << other.header;
  }
  std::string errors = compileOnly(dir.path(), "scale.cpp", false);
  EXPECT_NE(errors.find("scale.h comes from another tritium AOT run than scale.cpp"),
            std::string::npos)
      << errors;
}

// A kernel that waits on the previous one (griddep_wait) is launched as tritium's runtime launches
// it: with programmatic stream serialization, through cuLaunchKernelEx; the files say so and
// still compile against cuda.h alone. Below sm_90 the wait compiles away and the launch is plain.
void waiting_scale(Ptr out, Ptr x, Int n, int BLOCK) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  griddep_wait();
  store(out + offs, load(x + offs, mask, 0.0) * 2.0, mask);
}

TEST(AotGenerateTest, AKernelThatWaitsOnThePreviousOneOverlapsIt) {
  REQUIRE_PTXAS();
  tritium::testing::ScopedCacheDir cache;
  tritium::testing::ScopedTempDir dir("tritium-aot-test");
  static auto k = kernel("waiting_scale", waiting_scale, {"out", "x", "n", "BLOCK"});
  auto waiting = [&](const std::string &name, const std::string &arch) {
    return aot::Variant{.name = name,
                        .kernel = &k,
                        .spec = {.signature = {"*fp32", "*fp32", "i32"},
                                 .constexprs = {256},
                                 .arch = arch},
                        .grid = aot::GridRule::PerProgram};
  };
  aot::GeneratedFiles f = generateScale({waiting("waits_sm90", "sm_90")}, "waits_sm90");
  EXPECT_NE(f.header.find("#define waits_sm90_WAITS_ON_PRIOR_KERNEL 1"), std::string::npos);
  EXPECT_NE(f.source.find("overlapping the previous kernel (griddep_wait)"), std::string::npos);
  EXPECT_NE(f.source.find("griddepcontrol.wait"), std::string::npos);

  EXPECT_NE(f.source.find("CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"),
            std::string::npos);
  aot::writeFiles(f, dir.path());
  EXPECT_EQ(compileOnly(dir.path(), "waits_sm90.cpp", false), "");

  aot::GeneratedFiles old = generateScale({waiting("waits_sm80", "sm_80")}, "waits_sm80");
  EXPECT_NE(old.header.find("#define waits_sm80_WAITS_ON_PRIOR_KERNEL 0"), std::string::npos);
  EXPECT_EQ(old.source.find("griddepcontrol.wait"), std::string::npos);
  EXPECT_NE(old.source.find("false, false};"), std::string::npos);
}

// A kernel whose descriptor tiles are TMA copies and a TMA store (sm_90a): the launchers encode
// its CUtensorMaps from the arguments as tritium's runtime does (cuTensorMapEncodeTiled, the
// recipe's numbers from the named arguments) and pass them after the arguments; the files
// still compile against cuda.h alone. The kernel is the AOT consumer's tiled_scale.

TEST(AotGenerateTest, LaunchersEncodeTheTensorMapsOfTmaTiles) {
  REQUIRE_PTXAS();
  tritium::testing::ScopedCacheDir cache;
  tritium::testing::ScopedTempDir dir("tritium-aot-test");
  static auto k = kernel("tiled_scale", aot_consumer::tiled_scale,
                         {"out", "in", "rows", "cols", "BR", "BC"});
  aot::Variant v{.name = "tiled_copy_tma",
                 .kernel = &k,
                 .spec = {.signature = {"*fp32:16", "*fp32:16", "i32:16", "i32:16"},
                          .constexprs = {32, 64},
                          .arch = "sm_90a"},
                 .grid = aot::GridRule::PerProgram};
  aot::GeneratedFiles f = generateScale({v}, "tiled_copy_tma");
  // The load's map (in) and the store's (out), each two panels of 32 columns.
  EXPECT_EQ(countOf(f.source, "tritium_aot::encodeTensorMap(\"tiled_copy_tma: tensor map "), 2u)
      << f.source;
  EXPECT_NE(f.source.find("uint64_t(out)"), std::string::npos);
  EXPECT_NE(f.source.find("uint64_t(in)"), std::string::npos);
  EXPECT_NE(f.source.find("(int64_t)(cols) * 4 / 1"), std::string::npos) << f.source;
  EXPECT_NE(f.source.find("&maps[0], &maps[1]};"), std::string::npos);
  EXPECT_NE(f.source.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"),
            std::string::npos);
  aot::writeFiles(f, dir.path());
  EXPECT_EQ(compileOnly(dir.path(), "tiled_copy_tma.cpp", false), "");
}

TEST(AotGenerateTest, DispatcherTriesVariantsInOrderAndTakesADtypeWhenTheyDiffer) {
  REQUIRE_PTXAS();
  tritium::testing::ScopedCacheDir cache;
  aot::GeneratedFiles f = generateScale(
      {variant("scale_small", {"*fp32:16", "*fp32:16", "i32:16", "fp32"}, 256,
               {aot::Condition::parse("n<=4096")}),
       variant("scale_f16", {"*fp16", "*fp16", "i32", "fp32"}),
       variant("scale_any", {"*fp32", "*fp32", "i32", "fp32"}, 1024)},
      "scale");
  const std::string &s = f.source, &h = f.header;
  EXPECT_NE(h.find("CUresult scale(CUstream stream, int64_t programs, const char *dtype, "
                   "CUdeviceptr out, CUdeviceptr x, int32_t n, float factor);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find(" *   scale_small (dtype fp32, signature *fp32:16, *fp32:16, i32:16, fp32, "
                   "n <= 4096)\n *   scale_f16 (dtype fp16,"),
            std::string::npos)
      << h;
  size_t body = s.find("extern \"C\" CUresult scale(CUstream stream");
  ASSERT_NE(body, std::string::npos);
  size_t a = s.find("std::strcmp(dtype, \"fp32\") == 0 && scale_small_fits(nullptr", body);
  size_t b = s.find("std::strcmp(dtype, \"fp16\") == 0 && scale_f16_fits(nullptr", body);
  size_t c = s.find("std::strcmp(dtype, \"fp32\") == 0 && scale_any_fits(nullptr", body);
  EXPECT_TRUE(a != std::string::npos && a < b && b < c && c != std::string::npos) << s.substr(body);
  EXPECT_NE(s.find("scale: no variant fits the arguments:"), std::string::npos);

  // Variants of one dtype: no dtype argument.
  aot::GeneratedFiles same = generateScale(
      {variant("scale_a", {"*fp32:16", "*fp32:16", "i32", "fp32"}),
       variant("scale_b", {"*fp32", "*fp32", "i32", "fp32"})},
      "scale2");
  EXPECT_NE(same.header.find("CUresult scale2(CUstream stream, int64_t programs, CUdeviceptr out"),
            std::string::npos);
}

TEST(AotGenerateTest, MistakesNameTheVariantAndTheMistake) {
  tritium::testing::ScopedCacheDir cache;
  std::string ptxas = havePtxas() ? tritium::testing::ptxasPath() : "/bin/true";
  auto gen = [&](std::vector<aot::Variant> v, std::string name) {
    return [v = std::move(v), name, ptxas] { aot::generate(v, {.name = name, .ptxas = ptxas}); };
  };
  std::vector<std::string> sig = {"*fp32", "*fp32", "i32", "fp32"};
  aot::Variant unknownArch = variant("scale_x", sig);
  unknownArch.spec.arch = "sm_1";
  expectUserError(gen({unknownArch}, "scale_x"),
                  {"AOT variant 'scale_x'", "unknown GPU architecture 'sm_1'", "sm_90a"});
  expectUserError(gen({variant("scale_x", {"*fp32", "*fp32", "i32"})}, "scale_x"),
                  {"AOT variant 'scale_x'", "signature lists 3 types"});
  expectUserError(gen({variant("scale_x", {"*fp32", "i32", "i32", "fp32"})}, "scale_x"),
                  {"AOT variant 'scale_x'", "parameter 1 ('x')", "'i32'"});
  expectUserError(gen({variant("scale-x", sig)}, "scale"), {"'scale-x' is not a C identifier"});
  expectUserError(gen({variant("scale_x", sig)}, "2scale"), {"'2scale' is not a C identifier"});
  expectUserError(gen({variant("a", sig), variant("a", sig)}, "scale"), {"'a' is given twice"});
  expectUserError(gen({variant("scale", sig), variant("b", sig)}, "scale"),
                  {"'scale' has the dispatcher's name"});
  expectUserError(gen({}, "scale"), {"no variant given"});
  if (!havePtxas())
    GTEST_SKIP() << "ptxas was not found at configure time; the checks after compiling were "
                    "not run";
  expectUserError(gen({variant("scale_x", sig, 256, {aot::Condition::parse("rows<8")})}, "scale_x"),
                  {"condition 'rows < 8' names no runtime argument", "the integer arguments are n"});
  expectUserError(gen({variant("scale_x", sig, 256, {aot::Condition::parse("out<8")})}, "scale_x"),
                  {"condition 'out < 8' is on 'out', which is *fp32, not an integer"});
  expectUserError(gen({variant("a", sig), variant("b", {"*fp32", "*fp32", "i64", "fp32"})}, "s"),
                  {"'a' and 'b' cannot share a dispatcher", "int32_t n", "int64_t n"});
}
