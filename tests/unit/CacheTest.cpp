// Tests for the on-disk kernel cache: key derivation, round trips, and that every kind of damage
// (truncation, flipped bytes, bad json, missing files) is caught and the entry dropped rather
// than handed back to the launcher.
#include "runtime/Cache.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"

namespace fs = std::filesystem;
using namespace tritium::rt;

namespace {

// Gives each test a fresh cache root and captures what the cache logs.
class CacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("tritium-cache-test-" + std::to_string(::getpid()) + "-" +
                                        info->name() + "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Debug goes to our sink only; the existing (stderr) sinks keep the user's level.
    oldLevel_ = tritium::log().level();
    for (auto &s : tritium::log().sinks())
      s->set_level(oldLevel_);
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged_);
    sink_->set_pattern("%l: %v");
    tritium::log().sinks().push_back(sink_);
    tritium::log().set_level(spdlog::level::debug);
  }
  void TearDown() override {
    auto &sinks = tritium::log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    for (auto &s : sinks)
      s->set_level(spdlog::level::trace);
    tritium::log().set_level(oldLevel_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string logs() const { return logged_.str(); }
  bool warned() const { return logs().find("warning: ") != std::string::npos; }

  static CacheEntry sampleEntry() {
    CacheEntry e;
    e.kernelName = "softmax_kernel";
    e.files["softmax_kernel.tir"] = "tt.func @softmax_kernel() {}\n";
    e.files["softmax_kernel.ptx"] = ".version 8.4\n.target sm_90\n";
    e.files["softmax_kernel.bin"] = std::string("\0\1\2\xff binary", 11);
    e.metadata["num_warps"] = 4;
    e.metadata["shared"] = 1024;
    e.metadata["name"] = "softmax_kernel";
    return e;
  }

  fs::path dir_;
  std::ostringstream logged_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum oldLevel_ = spdlog::level::warn;
};

const std::string Key = cacheKey({{"ir", "x"}});

std::vector<std::pair<std::string, std::string>> sampleParts() {
  return {{"ir", "tt.func @k() {}"}, {"signature", "*fp32,i32"}, {"specialization", "d16:0"},
          {"arch", "sm_90"},         {"ptx_version", "84"},      {"num_warps", "4"},
          {"num_stages", "3"},       {"tritium_version", "0.1"}, {"llvm_version", "22.0"}};
}

} // namespace

TEST_F(CacheTest, KeyIsStableLowercaseHex) {
  std::string k = cacheKey(sampleParts());
  EXPECT_EQ(k, cacheKey(sampleParts()));
  ASSERT_EQ(k.size(), 64u);
  for (char c : k)
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << k;
}

TEST_F(CacheTest, KeyChangesWithEachPartNameAndValue) {
  const std::string base = cacheKey(sampleParts());
  for (size_t i = 0; i < sampleParts().size(); ++i) {
    auto parts = sampleParts();
    parts[i].second += "x";
    EXPECT_NE(cacheKey(parts), base) << "value of " << parts[i].first;
    parts = sampleParts();
    parts[i].first += "_";
    EXPECT_NE(cacheKey(parts), base) << "name of " << sampleParts()[i].first;
  }
}

TEST_F(CacheTest, KeyDistinguishesAmbiguousConcatenations) {
  EXPECT_NE(cacheKey({{"ab", "c"}}), cacheKey({{"a", "bc"}}));
  EXPECT_NE(cacheKey({{"a", "b"}, {"c", "d"}}), cacheKey({{"a", "bc"}, {"", "d"}}));
  EXPECT_NE(cacheKey({{"a", "b"}}), cacheKey({{"a", "b"}, {"", ""}}));
  EXPECT_NE(cacheKey({{"1:a", ""}}), cacheKey({{"", "a"}}));
  EXPECT_NE(cacheKey({{"a", "1"}, {"b", "2"}}), cacheKey({{"b", "2"}, {"a", "1"}}));
}

TEST_F(CacheTest, StoreThenLoadRoundTrips) {
  DiskCache cache(dir_);
  EXPECT_EQ(cache.root(), dir_);
  EXPECT_EQ(cache.entryDir(Key), dir_ / Key);
  CacheEntry in = sampleEntry();
  cache.store(Key, in);
  EXPECT_TRUE(fs::exists(dir_ / Key / "softmax_kernel.json"));

  std::optional<CacheEntry> out = cache.load(Key, "softmax_kernel");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->kernelName, "softmax_kernel");
  EXPECT_EQ(out->files, in.files);
  EXPECT_EQ(out->metadata.getInteger("num_warps"), 4);
  EXPECT_EQ(out->metadata.getInteger("shared"), 1024);
  EXPECT_EQ(out->metadata.getString("name"), "softmax_kernel");
  EXPECT_EQ(out->metadata.get("files"), nullptr); // bookkeeping is not handed back
  EXPECT_EQ(out->metadata.get("key"), nullptr);
  EXPECT_NE(logs().find("cache hit: loaded softmax_kernel from " + (dir_ / Key).string()),
            std::string::npos);
  EXPECT_FALSE(warned());
}

TEST_F(CacheTest, MissReturnsNullopt) {
  DiskCache cache(dir_ / "does-not-exist-yet");
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  DiskCache real(dir_);
  real.store(Key, sampleEntry());
  EXPECT_FALSE(real.load(cacheKey({{"ir", "y"}}), "softmax_kernel"));
  EXPECT_FALSE(real.load(Key, "other_kernel"));
  EXPECT_FALSE(warned());
  EXPECT_TRUE(real.load(Key, "softmax_kernel")); // a miss on another name leaves it intact
}

TEST_F(CacheTest, TruncatedFileIsDetected) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  fs::path ptx = dir_ / Key / "softmax_kernel.ptx";
  fs::resize_file(ptx, fs::file_size(ptx) / 2);
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_TRUE(warned());
  EXPECT_NE(logs().find((dir_ / Key).string()), std::string::npos);
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
}

TEST_F(CacheTest, FlippedByteIsDetected) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  fs::path bin = dir_ / Key / "softmax_kernel.bin";
  auto size = fs::file_size(bin);
  {
    std::fstream f(bin, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('\x00');
  }
  EXPECT_EQ(fs::file_size(bin), size);
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_NE(logs().find("does not match its blake3 hash"), std::string::npos);
}

TEST_F(CacheTest, CorruptJsonIsDetected) {
  DiskCache cache(dir_);
  fs::path json = dir_ / Key / "softmax_kernel.json";
  cache.store(Key, sampleEntry());
  fs::resize_file(json, fs::file_size(json) / 2);
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_TRUE(warned());

  for (const char *bad : {"", "[1, 2]", "{\"key\": \"wrong\", \"files\": {}}", "{\"files\": 3}"}) {
    cache.store(Key, sampleEntry());
    std::ofstream(json, std::ios::trunc) << bad;
    EXPECT_FALSE(cache.load(Key, "softmax_kernel")) << bad;
    EXPECT_FALSE(fs::exists(dir_ / Key)) << bad;
  }
}

TEST_F(CacheTest, EntryUnderAnotherKeyIsRejected) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  std::string other = cacheKey({{"ir", "other"}});
  fs::rename(dir_ / Key, dir_ / other);
  EXPECT_FALSE(cache.load(other, "softmax_kernel"));
  EXPECT_FALSE(fs::exists(dir_ / other));
}

TEST_F(CacheTest, MissingListedFileIsDetected) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  fs::remove(dir_ / Key / "softmax_kernel.tir");
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_NE(logs().find("missing file softmax_kernel.tir"), std::string::npos);
}

TEST_F(CacheTest, LeftoverTmpFilesDoNotBreakLoad) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  // What a writer killed mid-store leaves behind, including a half-written commit record.
  std::ofstream(dir_ / Key / ".tmp.12345.7.softmax_kernel.ptx") << ".vers";
  std::ofstream(dir_ / Key / ".tmp.12345.8.softmax_kernel.json") << "{\"ke";
  std::optional<CacheEntry> out = cache.load(Key, "softmax_kernel");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->files, sampleEntry().files);
  cache.store(Key, sampleEntry()); // and a later store still commits over them
  EXPECT_TRUE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(warned());
}

TEST_F(CacheTest, InterruptedFirstStoreIsAMiss) {
  // Files renamed into place but the json never written: not an entry yet.
  fs::create_directories(dir_ / Key);
  std::ofstream(dir_ / Key / "softmax_kernel.ptx") << ".version 8.4\n";
  DiskCache cache(dir_);
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(warned());
}

TEST_F(CacheTest, AddFilesExtendsEntry) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  CacheEntry extra;
  extra.kernelName = "softmax_kernel";
  extra.files["softmax_kernel.cubin"] = std::string("\x7f" "ELF\0\0cubin", 11);
  extra.metadata["regs"] = 32;
  extra.metadata["shared"] = 2048;
  cache.addFiles(Key, extra);

  std::optional<CacheEntry> out = cache.load(Key, "softmax_kernel");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->files.size(), 4u);
  EXPECT_EQ(out->files["softmax_kernel.cubin"], extra.files["softmax_kernel.cubin"]);
  EXPECT_EQ(out->files["softmax_kernel.ptx"], sampleEntry().files["softmax_kernel.ptx"]);
  EXPECT_EQ(out->metadata.getInteger("regs"), 32);
  EXPECT_EQ(out->metadata.getInteger("shared"), 2048);
  EXPECT_EQ(out->metadata.getInteger("num_warps"), 4);
  EXPECT_FALSE(warned());
}

TEST_F(CacheTest, AddFilesWithoutEntryStores) {
  DiskCache cache(dir_);
  CacheEntry e = sampleEntry();
  cache.addFiles(Key, e);
  std::optional<CacheEntry> out = cache.load(Key, "softmax_kernel");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->files, e.files);
}

TEST_F(CacheTest, UnwritableRootLogsAndDoesNotThrow) {
  fs::path file = dir_ / "not-a-dir";
  std::ofstream(file) << "in the way";
  DiskCache cache(file);
  EXPECT_NO_THROW(cache.store(Key, sampleEntry()));
  EXPECT_TRUE(warned());
  EXPECT_NE(logs().find("continuing without caching"), std::string::npos);
  EXPECT_NO_THROW(cache.addFiles(Key, sampleEntry()));
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));

  if (::geteuid() == 0)
    return; // root ignores permission bits
  fs::path ro = dir_ / "read-only";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  DiskCache roCache(ro);
  EXPECT_NO_THROW(roCache.store(Key, sampleEntry()));
  EXPECT_FALSE(roCache.load(Key, "softmax_kernel"));
  fs::permissions(ro, fs::perms::owner_all);
}

TEST_F(CacheTest, InvalidNamesAreInternalErrors) {
  DiskCache cache(dir_);
  CacheEntry e = sampleEntry();
  e.files["../escape"] = "x";
  EXPECT_THROW(cache.store(Key, e), tritium::InternalError);
  e = sampleEntry();
  e.files["softmax_kernel.json"] = "{}";
  EXPECT_THROW(cache.store(Key, e), tritium::InternalError);
  EXPECT_THROW(cache.entryDir("../x"), tritium::InternalError);
  EXPECT_FALSE(fs::exists(dir_ / ".." / "escape"));
}

TEST_F(CacheTest, ConcurrentStoresOfOneKeyStayValid) {
  DiskCache cache(dir_);
  std::atomic<bool> sawCorrupt{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      DiskCache mine(dir_);
      for (int i = 0; i < 25; ++i) {
        mine.store(Key, sampleEntry());
        if (!mine.load(Key, "softmax_kernel"))
          sawCorrupt = true; // after our own store, a reader must always see a full entry
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_FALSE(sawCorrupt);
  EXPECT_FALSE(warned());
  std::optional<CacheEntry> out = cache.load(Key, "softmax_kernel");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->files, sampleEntry().files);
}

TEST_F(CacheTest, DefaultCacheDirHonoursEnvironment) {
  auto saved = [](const char *name) -> std::optional<std::string> {
    const char *v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char *name, const std::optional<std::string> &v) {
    v ? ::setenv(name, v->c_str(), 1) : ::unsetenv(name);
  };
  std::optional<std::string> oldDir = saved("TRITIUM_CACHE_DIR"), oldHome = saved("HOME");

  ::setenv("TRITIUM_CACHE_DIR", dir_.c_str(), 1);
  EXPECT_EQ(defaultCacheDir(), dir_);
  EXPECT_EQ(DiskCache().root(), dir_);
  ::unsetenv("TRITIUM_CACHE_DIR");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(defaultCacheDir(), fs::path("/home/someone/.cache/tritium"));
  ::unsetenv("HOME");
  EXPECT_EQ(defaultCacheDir(), fs::path("/tmp/tritium-cache"));

  restore("TRITIUM_CACHE_DIR", oldDir);
  restore("HOME", oldHome);
}

// --- What the asker expects, and the record's own hash -----------------------------------------

TEST_F(CacheTest, RecordCarriesItsMetadataHash) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  std::ifstream in(dir_ / Key / "softmax_kernel.json");
  std::stringstream text;
  text << in.rdbuf();
  auto json = llvm::json::parse(text.str());
  ASSERT_TRUE(bool(json));
  std::optional<llvm::StringRef> hash = json->getAsObject()->getString("metadata_blake3");
  ASSERT_TRUE(hash);
  EXPECT_EQ(hash->size(), 64u);
  // Not handed back: it is bookkeeping.
  std::optional<CacheEntry> out = cache.load(Key, "softmax_kernel");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->metadata.get("metadata_blake3"), nullptr);
}

TEST_F(CacheTest, EditedMetadataIsDetected) {
  DiskCache cache(dir_);
  cache.store(Key, sampleEntry());
  fs::path json = dir_ / Key / "softmax_kernel.json";
  std::string text;
  {
    std::ifstream in(json);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  size_t at = text.find("\"shared\": 1024");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 14, "\"shared\": 4096");
  std::ofstream(json, std::ios::trunc) << text;
  EXPECT_FALSE(cache.load(Key, "softmax_kernel"));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_NE(logs().find("the json's fields do not match its metadata_blake3"), std::string::npos)
      << logs();
}

TEST_F(CacheTest, ExpectedFieldsAreCompared) {
  DiskCache cache(dir_);
  CacheExpectation expect;
  expect.fields["name"] = "softmax_kernel";
  expect.fields["num_warps"] = 4;
  cache.store(Key, sampleEntry());
  EXPECT_TRUE(cache.load(Key, "softmax_kernel", expect));
  EXPECT_FALSE(warned());

  expect.fields["num_warps"] = 8;
  EXPECT_FALSE(cache.load(Key, "softmax_kernel", expect));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_NE(logs().find("warning: cache: entry " + (dir_ / Key).string() +
                        " (softmax_kernel) is unusable: \"num_warps\" is 4 in the json, "
                        "expected 8; removing it so that it is rebuilt"),
            std::string::npos)
      << logs();

  cache.store(Key, sampleEntry());
  CacheExpectation named;
  named.fields["name"] = "other";
  EXPECT_FALSE(cache.load(Key, "softmax_kernel", named));
  EXPECT_NE(logs().find("\"name\" is \"softmax_kernel\" in the json, expected \"other\""),
            std::string::npos)
      << logs();

  cache.store(Key, sampleEntry());
  CacheExpectation absent;
  absent.fields["arch"] = "sm_90";
  EXPECT_FALSE(cache.load(Key, "softmax_kernel", absent));
  EXPECT_NE(logs().find("the json has no \"arch\", expected \"sm_90\""), std::string::npos)
      << logs();
}

TEST_F(CacheTest, ExpectedCountsMustBeNonNegativeIntegers) {
  DiskCache cache(dir_);
  CacheExpectation expect;
  expect.counts = {"shared"};
  cache.store(Key, sampleEntry());
  EXPECT_TRUE(cache.load(Key, "softmax_kernel", expect));
  for (llvm::json::Value bad : {llvm::json::Value(-1), llvm::json::Value("1024"),
                                llvm::json::Value(nullptr)}) {
    CacheEntry e = sampleEntry();
    e.metadata["shared"] = bad;
    cache.store(Key, e);
    EXPECT_FALSE(cache.load(Key, "softmax_kernel", expect));
  }
  CacheEntry e = sampleEntry();
  e.metadata.erase("shared");
  cache.store(Key, e);
  EXPECT_FALSE(cache.load(Key, "softmax_kernel", expect));
  EXPECT_NE(logs().find("\"shared\" is missing in the json, expected a count"), std::string::npos)
      << logs();
}

TEST_F(CacheTest, RequiredFileThatIsNotListedIsDetected) {
  // An entry whose json never listed a file the asker needs (written by other code, or with the
  // listing removed) is not a hit with that file empty.
  DiskCache cache(dir_);
  CacheEntry e = sampleEntry();
  e.files.erase("softmax_kernel.ptx");
  cache.store(Key, e);
  CacheExpectation expect;
  expect.requiredFiles = {"softmax_kernel.tir", "softmax_kernel.ptx"};
  EXPECT_FALSE(cache.load(Key, "softmax_kernel", expect));
  EXPECT_FALSE(fs::exists(dir_ / Key));
  EXPECT_NE(logs().find("required file softmax_kernel.ptx is not listed"), std::string::npos)
      << logs();
  // Listed and present: a hit.
  cache.store(Key, sampleEntry());
  EXPECT_TRUE(cache.load(Key, "softmax_kernel", expect));
}

TEST_F(CacheTest, ConcurrentRemovalOfOneBadEntryIsQuiet) {
  // Many readers find the same damaged entry at once; each may try to remove it, and the ones
  // that find it gone already must not warn that they cannot remove it.
  for (int round = 0; round < 20; ++round) {
    DiskCache cache(dir_);
    cache.store(Key, sampleEntry());
    fs::resize_file(dir_ / Key / "softmax_kernel.ptx", 3);
    std::atomic<int> hits{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        if (DiskCache(dir_).load(Key, "softmax_kernel"))
          ++hits;
      });
    for (auto &t : threads)
      t.join();
    EXPECT_EQ(hits, 0);
    EXPECT_FALSE(fs::exists(dir_ / Key));
  }
  EXPECT_TRUE(warned()); // the damage itself is reported
  EXPECT_EQ(logs().find("cannot remove"), std::string::npos) << logs();
  // Nothing is left behind in the root: no entry, no renamed-away folder.
  EXPECT_TRUE(fs::is_empty(dir_)) << fs::directory_iterator(dir_)->path();
}
