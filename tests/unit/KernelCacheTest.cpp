// The disk cache end to end through Kernel::compile: what the first compile writes, that a fresh
// Kernel object finds it, what changes the key, that a damaged entry is rebuilt, and the
// in-memory cache of one Kernel object.
#include "TestSupport.h"

#include "examples/kernels/Softmax.h"
#include "frontend/Kernel.h"

#include <llvm/Support/JSON.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

using namespace tritium;
using namespace tritium::dsl;
namespace fs = std::filesystem;

namespace {

// The tutorial's kernel again (examples/kernels/Softmax.cpp keeps its function private), so each
// test can declare fresh Kernel objects with empty in-memory caches.
void softmax_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride, Int output_row_stride,
                    Int n_rows, Int n_cols, int BLOCK_SIZE, int num_stages) {
  auto row_start = program_id(0);
  auto row_step = num_programs(0);
  for (auto row_idx : range(row_start, n_rows, row_step, num_stages)) {
    auto row_start_ptr = input_ptr + row_idx * input_row_stride;
    auto col_offsets = arange(0, BLOCK_SIZE);
    auto input_ptrs = row_start_ptr + col_offsets;
    auto mask = col_offsets < n_cols;
    auto row = load(input_ptrs, mask, -INFINITY);
    auto row_minus_max = row - max(row, 0);
    auto numerator = exp(row_minus_max);
    auto denominator = sum(numerator, 0);
    auto softmax_output = numerator / denominator;
    auto output_row_start_ptr = output_ptr + row_idx * output_row_stride;
    auto output_ptrs = output_row_start_ptr + col_offsets;
    store(output_ptrs, softmax_output, mask);
  }
}

const std::vector<std::string> kNames = {"output_ptr", "input_ptr", "input_row_stride",
                                         "output_row_stride", "n_rows", "n_cols",
                                         "BLOCK_SIZE", "num_stages"};

#define FRESH_SOFTMAX() tritium::kernel("softmax_kernel", softmax_kernel, kNames)

Specialization smallSpec() {
  return Specialization{.signature = {"*fp32", "*fp32", "i32", "i32", "i32", "i32"},
                        .constexprs = {128, 2},
                        .numWarps = 4,
                        .numStages = 2};
}

std::string readFile(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char *kExtensions[] = {".tir", ".gir", ".ll", ".ptx", ".json"};

class KernelCacheTest : public tritium::testing::CompilerTest {};

} // namespace

TEST_F(KernelCacheTest, FirstCompileWritesEveryStage) {
  auto kernel = FRESH_SOFTMAX();
  CompiledKernel &k = kernel.compile(smallSpec());
  const KernelMetadata &m = k.metadata();
  EXPECT_FALSE(m.fromCache);
  EXPECT_EQ(m.name, "softmax_kernel");
  ASSERT_EQ(m.cacheKey.size(), 64u);
  EXPECT_EQ(m.cacheDir, cacheDir() / m.cacheKey) << "TRITIUM_CACHE_DIR must be honoured";
  for (const char *ext : kExtensions) {
    fs::path p = m.cacheDir / (std::string("softmax_kernel") + ext);
    ASSERT_TRUE(fs::is_regular_file(p)) << p;
    EXPECT_GT(fs::file_size(p), 0u) << p;
  }
  EXPECT_EQ(readFile(m.cacheDir / "softmax_kernel.ptx"), k.artifacts().ptx);
  EXPECT_EQ(readFile(m.cacheDir / "softmax_kernel.tir"), k.artifacts().tir);
  EXPECT_EQ(readFile(m.cacheDir / "softmax_kernel.gir"), k.artifacts().gir);
  EXPECT_EQ(readFile(m.cacheDir / "softmax_kernel.ll"), k.artifacts().llvm);
  EXPECT_NE(k.artifacts().ptx.find(".entry softmax_kernel("), std::string::npos);

  // The commit record describes the specialization.
  auto json = llvm::json::parse(readFile(m.cacheDir / "softmax_kernel.json"));
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Object *o = json->getAsObject();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->getString("key"), m.cacheKey);
  EXPECT_EQ(o->getString("name"), "softmax_kernel");
  EXPECT_EQ(o->getInteger("num_warps"), 4);
  EXPECT_EQ(o->getInteger("num_stages"), 2);
  EXPECT_EQ(o->getString("arch"), "sm_90");
  EXPECT_EQ(o->getInteger("threads"), 128);
  EXPECT_EQ(o->getInteger("shared"), m.sharedBytes);
  // The build-time hash of the compiler's sources, also in the key (cmake/SourceFingerprint.cmake).
  std::string fingerprint = o->getString("source_fingerprint").value_or("").str();
  EXPECT_EQ(fingerprint.size(), 64u) << fingerprint;
  EXPECT_EQ(fingerprint.find_first_not_of("0123456789abcdef"), std::string::npos) << fingerprint;
  const llvm::json::Array *sig = o->getArray("signature");
  ASSERT_NE(sig, nullptr);
  ASSERT_EQ(sig->size(), 6u);
  EXPECT_EQ((*sig)[0].getAsString(), "*fp32");
  EXPECT_EQ((*sig)[5].getAsString(), "i32");
  const llvm::json::Object *files = o->getObject("files");
  ASSERT_NE(files, nullptr);
  for (const char *ext : {".tir", ".gir", ".ll", ".ptx"})
    EXPECT_NE(files->get(std::string("softmax_kernel") + ext), nullptr) << ext;

  // The metadata of the compiled kernel.
  EXPECT_EQ(m.signature.names,
            (std::vector<std::string>{"output_ptr", "input_ptr", "input_row_stride",
                                      "output_row_stride", "n_rows", "n_cols"}));
  ASSERT_EQ(m.constexprs.size(), 2u);
  EXPECT_EQ(m.constexprs[0], (std::pair<std::string, int64_t>{"BLOCK_SIZE", 128}));
  EXPECT_EQ(m.constexprs[1], (std::pair<std::string, int64_t>{"num_stages", 2}));
  EXPECT_EQ(k.numThreads(), 128);
  EXPECT_GT(m.sharedBytes, 0); // two cross-warp reductions
}

TEST_F(KernelCacheTest, FreshKernelObjectLoadsFromDisk) {
  auto first = FRESH_SOFTMAX();
  CompiledKernel &a = first.compile(smallSpec());
  ASSERT_FALSE(a.metadata().fromCache);

  auto second = FRESH_SOFTMAX();
  CompiledKernel &b = second.compile(smallSpec());
  EXPECT_TRUE(b.metadata().fromCache);
  EXPECT_NE(&a, &b);
  EXPECT_EQ(b.metadata().cacheKey, a.metadata().cacheKey);
  EXPECT_EQ(b.metadata().cacheDir, a.metadata().cacheDir);
  EXPECT_EQ(b.artifacts().ptx, a.artifacts().ptx);
  EXPECT_EQ(b.artifacts().tir, a.artifacts().tir);
  EXPECT_EQ(b.artifacts().gir, a.artifacts().gir);
  EXPECT_EQ(b.artifacts().llvm, a.artifacts().llvm);
  EXPECT_EQ(b.artifacts().sharedBytes, a.artifacts().sharedBytes);
  EXPECT_EQ(b.metadata().sharedBytes, a.metadata().sharedBytes);
  EXPECT_EQ(b.metadata().signature.names, a.metadata().signature.names);
  EXPECT_EQ(b.metadata().constexprs, a.metadata().constexprs);
  EXPECT_EQ(b.metadata().options.numWarps, 4);
}

TEST_F(KernelCacheTest, KeyIgnoresSourceLocations) {
  // This file's copy of the tutorial kernel and the one in examples/ differ only in where they
  // were written, so they share the cache entry. (A spec no other test uses: the built-in kernel
  // keeps its in-memory cache for the whole process.)
  Specialization s = smallSpec();
  s.constexprs = {64, 3};
  s.numWarps = 2;
  auto mine = FRESH_SOFTMAX();
  CompiledKernel &a = mine.compile(s);
  ASSERT_FALSE(a.metadata().fromCache);
  CompiledKernel &b = kernels::softmaxKernel().compile(s);
  EXPECT_EQ(b.metadata().cacheKey, a.metadata().cacheKey);
  EXPECT_TRUE(b.metadata().fromCache);
  EXPECT_EQ(b.artifacts().ptx, a.artifacts().ptx);
}

TEST_F(KernelCacheTest, EverySpecializationFieldChangesTheKey) {
  auto kernel = FRESH_SOFTMAX();
  std::vector<std::pair<std::string, Specialization>> variants;
  variants.emplace_back("base", smallSpec());
  Specialization s = smallSpec();
  s.numWarps = 8;
  variants.emplace_back("num_warps", s);
  s = smallSpec();
  s.numStages = 3;
  variants.emplace_back("num_stages", s);
  s = smallSpec();
  s.constexprs[0] = 256;
  variants.emplace_back("BLOCK_SIZE", s);
  s = smallSpec();
  s.constexprs[1] = 1;
  variants.emplace_back("constexpr num_stages", s);
  s = smallSpec();
  s.signature[0] = s.signature[1] = "*fp16";
  variants.emplace_back("dtype", s);
  s = smallSpec();
  s.signature[2] = "i64";
  variants.emplace_back("stride type", s);
  s = smallSpec();
  s.arch = "sm_80";
  variants.emplace_back("arch", s);
  s = smallSpec();
  s.ptxVersion = 83;
  variants.emplace_back("ptx_version", s);

  std::set<fs::path> dirs;
  for (auto &[what, spec] : variants) {
    CompiledKernel &k = kernel.compile(spec);
    EXPECT_FALSE(k.metadata().fromCache) << what;
    EXPECT_TRUE(dirs.insert(k.metadata().cacheDir).second)
        << "changing " << what << " did not change the cache directory";
    EXPECT_TRUE(fs::exists(k.metadata().cacheDir / "softmax_kernel.json")) << what;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(cacheDir()), fs::directory_iterator()),
            std::ptrdiff_t(variants.size()));
  // And the same specialization again is a hit, in a fresh object.
  auto again = FRESH_SOFTMAX();
  for (auto &[what, spec] : variants)
    EXPECT_TRUE(again.compile(spec).metadata().fromCache) << what;
}

TEST_F(KernelCacheTest, TruncatedPtxIsRebuilt) {
  auto first = FRESH_SOFTMAX();
  CompiledKernel &a = first.compile(smallSpec());
  const std::string ptx = a.artifacts().ptx;
  fs::path file = a.metadata().cacheDir / "softmax_kernel.ptx";
  fs::resize_file(file, fs::file_size(file) / 2);

  auto second = FRESH_SOFTMAX();
  CompiledKernel &b = second.compile(smallSpec());
  EXPECT_FALSE(b.metadata().fromCache) << "a truncated entry was used";
  EXPECT_EQ(b.artifacts().ptx, ptx);
  EXPECT_EQ(b.metadata().cacheDir, a.metadata().cacheDir);
  // The rebuilt entry is whole again.
  EXPECT_EQ(readFile(file), ptx);
  auto third = FRESH_SOFTMAX();
  CompiledKernel &c = third.compile(smallSpec());
  EXPECT_TRUE(c.metadata().fromCache);
  EXPECT_EQ(c.artifacts().ptx, ptx);
}

TEST_F(KernelCacheTest, DamagedPtxOfSameSizeIsRebuilt) {
  auto first = FRESH_SOFTMAX();
  CompiledKernel &a = first.compile(smallSpec());
  fs::path file = a.metadata().cacheDir / "softmax_kernel.ptx";
  std::string text = readFile(file);
  text[text.size() / 2] ^= 1;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;

  auto second = FRESH_SOFTMAX();
  CompiledKernel &b = second.compile(smallSpec());
  EXPECT_FALSE(b.metadata().fromCache);
  EXPECT_EQ(b.artifacts().ptx, a.artifacts().ptx);
}

TEST_F(KernelCacheTest, SameKernelObjectHitsMemory) {
  auto kernel = FRESH_SOFTMAX();
  CompiledKernel &a = kernel.compile(smallSpec());
  CompiledKernel &b = kernel.compile(smallSpec());
  EXPECT_EQ(&a, &b);
  EXPECT_FALSE(b.metadata().fromCache); // the very object from the first compile
  // Memory is consulted before the disk: removing the entry changes nothing for this object.
  fs::remove_all(a.metadata().cacheDir);
  EXPECT_EQ(&kernel.compile(smallSpec()), &a);
  EXPECT_FALSE(fs::exists(a.metadata().cacheDir));
  // Another specialization is another object.
  Specialization s = smallSpec();
  s.numWarps = 2;
  CompiledKernel &c = kernel.compile(s);
  EXPECT_NE(&c, &a);
  EXPECT_EQ(&kernel.compile(s), &c);
}
