// The disk cache end to end through Kernel::compile: what the first compile writes, that a fresh
// Kernel object finds it, what changes the key, that a damaged or hand-edited entry is reported
// and rebuilt, and the in-memory cache of one Kernel object.
#include "LogCapture.h"
#include "TestSupport.h"

#include "kernels/Softmax.h"
#include "frontend/Kernel.h"

#include "compiler/support/Log.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

using namespace tritium;
using namespace tritium::dsl;
namespace fs = std::filesystem;

namespace {

// The tutorial's kernel again (kernels/Softmax.cpp keeps its function private), so each
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

// A kernel that waits on the previous one (griddep_wait) keeps saying so when it comes from the
// disk cache, since its launch depends on it; below sm_90 the wait compiles away and it does not.
void waits_then_copies(Ptr out, Ptr in, int BLOCK) {
  auto offs = arange(0, BLOCK);
  griddep_wait();
  store(out + offs, load(in + offs));
}

TEST_F(KernelCacheTest, TheGridDependencyWaitSurvivesTheCache) {
  for (const char *arch : {"sm_90", "sm_80"}) {
    Specialization spec{.signature = {"*fp32", "*fp32"}, .constexprs = {128}, .arch = arch};
    bool expected = std::string(arch) == "sm_90";
    auto first = tritium::kernel("waits_then_copies", waits_then_copies, {"out", "in", "BLOCK"});
    CompiledKernel &a = first.compile(spec);
    ASSERT_FALSE(a.metadata().fromCache) << arch;
    EXPECT_EQ(a.artifacts().waitsOnPriorKernel, expected) << arch;
    EXPECT_EQ(a.artifacts().ptx.find("griddepcontrol.wait") != std::string::npos, expected) << arch;
    auto second = tritium::kernel("waits_then_copies", waits_then_copies, {"out", "in", "BLOCK"});
    CompiledKernel &b = second.compile(spec);
    ASSERT_TRUE(b.metadata().fromCache) << arch;
    EXPECT_EQ(b.artifacts().waitsOnPriorKernel, expected) << arch;
  }
}

// Specialization::awaitPreviousKernel (Triton's launch_pdl) makes griddep_wait the kernel's first
// op, before any load, with no change to its source; a kernel not asked for it does not wait.
TEST_F(KernelCacheTest, AwaitingThePreviousKernelWaitsBeforeAnything) {
  for (const char *arch : {"sm_90", "sm_80"}) {
    Specialization spec = smallSpec();
    spec.arch = arch;
    spec.awaitPreviousKernel = true;
    auto kernel = FRESH_SOFTMAX();
    CompiledKernel &k = kernel.compile(spec);
    bool expected = std::string(arch) == "sm_90";
    EXPECT_EQ(k.artifacts().waitsOnPriorKernel, expected) << arch;
    const std::string &tir = k.artifacts().tir;
    size_t wait = tir.find("griddep_wait"), load = tir.find("load");
    ASSERT_NE(wait, std::string::npos) << tir;
    EXPECT_LT(wait, load) << tir;
    const std::string &ptx = k.artifacts().ptx;
    size_t pw = ptx.find("griddepcontrol.wait"), pl = ptx.find("ld.global");
    EXPECT_EQ(pw != std::string::npos, expected) << arch;
    if (expected) {
      EXPECT_LT(pw, pl) << ptx;
    }
    spec.awaitPreviousKernel = false;
    CompiledKernel &plain = kernel.compile(spec);
    EXPECT_FALSE(plain.artifacts().waitsOnPriorKernel) << arch;
    EXPECT_EQ(plain.artifacts().tir.find("griddep_wait"), std::string::npos) << arch;
  }
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
  s = smallSpec();
  s.awaitPreviousKernel = true;
  variants.emplace_back("await_previous", s);

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

// --- Hand-edited entries: checked against the specialization that asks, and rebuilt -----------

namespace {

using tritium::testing::LogCapture;

llvm::json::Object readJson(const fs::path &p) {
  auto json = llvm::json::parse(readFile(p));
  EXPECT_TRUE(bool(json));
  return json ? std::move(*json->getAsObject()) : llvm::json::Object();
}

std::string compact(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return s;
}

// Writes `o` as the entry's json. With `rehash`, metadata_blake3 is recomputed as the cache
// does, as someone who knows the format would: then only the checks against the asked-for
// specialization and the files' own hashes stand between the edit and a hit.
void writeJson(const fs::path &p, llvm::json::Object o, bool rehash) {
  if (rehash) {
    o.erase("metadata_blake3");
    std::string text = compact(llvm::json::Value(llvm::json::Object(o)));
    o["metadata_blake3"] = llvm::toHex(llvm::BLAKE3::hash(llvm::arrayRefFromStringRef(text)),
                                       /*LowerCase=*/true);
  }
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      << compact(llvm::json::Value(std::move(o))) << "\n";
}

// A different value of the same kind, for the field-by-field edits.
llvm::json::Value changed(const llvm::json::Value &v) {
  if (auto s = v.getAsString())
    return s->str() + "x";
  if (auto b = v.getAsBoolean())
    return !*b;
  if (auto i = v.getAsInteger())
    return *i + 1;
  if (auto a = v.getAsArray()) {
    llvm::json::Array copy = *a;
    copy.push_back("extra");
    return copy;
  }
  return nullptr;
}

} // namespace

// Compiles smallSpec() once, lets `edit` damage the entry, and checks that a fresh Kernel
// object reports the damage with `warning` and rebuilds a correct, whole entry.
static void expectRebuilt(const std::function<void(const fs::path &dir)> &edit,
                          const std::string &warning) {
  auto first = FRESH_SOFTMAX();
  CompiledKernel &a = first.compile(smallSpec());
  fs::path dir = a.metadata().cacheDir;
  edit(dir);

  LogCapture logs;
  auto second = FRESH_SOFTMAX();
  CompiledKernel &b = second.compile(smallSpec());
  EXPECT_FALSE(b.metadata().fromCache) << "the edited entry was used";
  EXPECT_NE(logs.text().find("cache: entry " + dir.string() + " (softmax_kernel) is unusable: " +
                             warning),
            std::string::npos)
      << logs.text();
  EXPECT_EQ(logs.text().find("cannot remove"), std::string::npos) << logs.text();
  EXPECT_EQ(b.artifacts().ptx, a.artifacts().ptx);
  EXPECT_EQ(b.metadata().sharedBytes, a.metadata().sharedBytes);
  EXPECT_EQ(b.metadata().options.numWarps, 4);
  // Rewritten whole: the next fresh object hits it.
  auto third = FRESH_SOFTMAX();
  CompiledKernel &c = third.compile(smallSpec());
  EXPECT_TRUE(c.metadata().fromCache);
  EXPECT_EQ(c.artifacts().ptx, a.artifacts().ptx);
  EXPECT_EQ(c.metadata().sharedBytes, a.metadata().sharedBytes);
  EXPECT_EQ(readJson(dir / "softmax_kernel.json").getInteger("num_warps"), 4);
  fs::remove_all(dir);
}

TEST_F(KernelCacheTest, EditedNameIsRebuilt) {
  for (bool rehash : {false, true})
    expectRebuilt(
        [&](const fs::path &dir) {
          llvm::json::Object o = readJson(dir / "softmax_kernel.json");
          o["name"] = "other_kernel";
          writeJson(dir / "softmax_kernel.json", std::move(o), rehash);
        },
        "\"name\" is \"other_kernel\" in the json, expected \"softmax_kernel\"");
}

TEST_F(KernelCacheTest, EditedNumWarpsIsRebuilt) {
  for (bool rehash : {false, true})
    expectRebuilt(
        [&](const fs::path &dir) {
          llvm::json::Object o = readJson(dir / "softmax_kernel.json");
          o["num_warps"] = 8;
          writeJson(dir / "softmax_kernel.json", std::move(o), rehash);
        },
        "\"num_warps\" is 8 in the json, expected 4");
}

TEST_F(KernelCacheTest, EditedSharedBytesAreRebuilt) {
  // Shared bytes are the compiler's result, not the specialization's: the record's hash
  // catches the edit.
  expectRebuilt(
      [](const fs::path &dir) {
        llvm::json::Object o = readJson(dir / "softmax_kernel.json");
        o["shared"] = *o.getInteger("shared") + 4096;
        writeJson(dir / "softmax_kernel.json", std::move(o), /*rehash=*/false);
      },
      "the json's fields do not match its metadata_blake3");
  // Removed (with the hash made to fit), it is not read as 0.
  expectRebuilt(
      [](const fs::path &dir) {
        llvm::json::Object o = readJson(dir / "softmax_kernel.json");
        o.erase("shared");
        writeJson(dir / "softmax_kernel.json", std::move(o), /*rehash=*/true);
      },
      "\"shared\" is missing in the json, expected a count");
}

TEST_F(KernelCacheTest, EverySpecializationFieldIsCompared) {
  auto kernel = FRESH_SOFTMAX();
  fs::path dir = kernel.compile(smallSpec()).metadata().cacheDir;
  llvm::json::Object original = readJson(dir / "softmax_kernel.json");
  std::vector<std::string> fields = {
      "name",           "signature",         "arg_names",       "constexprs",
      "specialization", "num_warps",         "num_stages",      "arch",
      "ptx_version",    "threads",           "programs_per_cta", "cluster_size",
      "min_blocks_per_sm", "bulk_copies",    "strength_reduction", "tritium_version",
      "source_fingerprint", "llvm_version"};
  for (const std::string &field : fields) {
    SCOPED_TRACE(field);
    const llvm::json::Value *v = original.get(field);
    ASSERT_NE(v, nullptr) << "the entry does not record " << field;
    expectRebuilt(
        [&](const fs::path &d) {
          llvm::json::Object o = readJson(d / "softmax_kernel.json");
          o[field] = changed(*v);
          writeJson(d / "softmax_kernel.json", std::move(o), /*rehash=*/true);
        },
        "\"" + field + "\" is " + compact(changed(*v)) + " in the json, expected " + compact(*v));
  }
}

TEST_F(KernelCacheTest, MissingFileIsRebuilt) {
  expectRebuilt([](const fs::path &dir) { fs::remove(dir / "softmax_kernel.gir"); },
                "missing file softmax_kernel.gir");
}

TEST_F(KernelCacheTest, UnlistedFileIsRebuilt) {
  // The listing of the LLVM IR removed from the json (and the hash made to fit): the stage
  // needs the file whether or not the json lists it.
  expectRebuilt(
      [](const fs::path &dir) {
        llvm::json::Object o = readJson(dir / "softmax_kernel.json");
        o.getObject("files")->erase("softmax_kernel.ll");
        writeJson(dir / "softmax_kernel.json", std::move(o), /*rehash=*/true);
      },
      "required file softmax_kernel.ll is not listed");
}

TEST_F(KernelCacheTest, TruncatedFileIsRebuiltWithAWarning) {
  expectRebuilt(
      [](const fs::path &dir) {
        fs::resize_file(dir / "softmax_kernel.tir", fs::file_size(dir / "softmax_kernel.tir") / 2);
      },
      "softmax_kernel.tir has ");
}

TEST_F(KernelCacheTest, ChangedBytesAreRebuiltWithAWarning) {
  expectRebuilt(
      [](const fs::path &dir) {
        std::string text = readFile(dir / "softmax_kernel.ll");
        text[text.size() / 3] ^= 1;
        std::ofstream(dir / "softmax_kernel.ll", std::ios::binary | std::ios::trunc) << text;
      },
      "softmax_kernel.ll does not match its blake3 hash");
}

TEST_F(KernelCacheTest, TwoCompilersFindingOneBadEntryAreQuiet) {
  auto first = FRESH_SOFTMAX();
  fs::path dir = first.compile(smallSpec()).metadata().cacheDir;
  fs::resize_file(dir / "softmax_kernel.ptx", 10);
  LogCapture logs;
  std::vector<std::thread> threads;
  std::atomic<int> hits{0};
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      auto mine = FRESH_SOFTMAX();
      if (mine.compile(smallSpec()).metadata().fromCache)
        ++hits; // the other one may have rebuilt it already: a valid hit
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(logs.text().find("cannot remove"), std::string::npos) << logs.text();
  auto last = FRESH_SOFTMAX();
  EXPECT_TRUE(last.compile(smallSpec()).metadata().fromCache);
}

// The autotuner compiles its candidates on several threads at once: specializations of one
// Kernel object compile side by side, and threads asking for the same one get one compile and
// the same object; the entries they wrote to the disk cache at once load back whole.
TEST_F(KernelCacheTest, SpecializationsCompileOnSeveralThreadsAtOnce) {
  auto kernel = FRESH_SOFTMAX();
  std::vector<Specialization> specs;
  for (int64_t block : {64, 128, 256, 512})
    for (int warps : {1, 2, 4}) {
      Specialization s = smallSpec();
      s.constexprs = {block, 2};
      s.numWarps = warps;
      specs.push_back(s);
    }
  std::vector<CompiledKernel *> got(specs.size() * 2, nullptr);
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 6; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < got.size();)
        got[i] = &kernel.compile(specs[i % specs.size()]);
    });
  for (std::thread &t : pool)
    t.join();
  auto fresh = FRESH_SOFTMAX();
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_NE(got[i], nullptr);
    EXPECT_EQ(got[i], got[i + specs.size()]) << specs[i].str(); // one compile, one object
    EXPECT_EQ(got[i], &kernel.compile(specs[i]));
    CompiledKernel &loaded = fresh.compile(specs[i]);
    EXPECT_TRUE(loaded.metadata().fromCache) << specs[i].str();
    EXPECT_EQ(got[i]->artifacts().ptx, loaded.artifacts().ptx) << specs[i].str();
  }
}
