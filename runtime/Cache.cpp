// The on-disk kernel cache. Every file goes through a uniquely named temp file and a rename, and
// the metadata json (with each file's size and BLAKE3 hash) is renamed into place last, so a reader
// either sees a complete, verifiable entry or a miss. Verification on load also catches what
// crash-safety alone cannot (a power loss after the rename, disk corruption, manual edits).
#include "runtime/Cache.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

namespace fs = std::filesystem;

namespace tritium::rt {

namespace {

constexpr const char *TmpPrefix = ".tmp.";
// Temp files older than this belong to a writer that died; younger ones may be in flight.
constexpr auto StaleTmpAge = std::chrono::hours(1);

// The hash that checks an entry's files and record on every load: BLAKE3, as collision-resistant
// as SHA-256 and about 16 times faster in LLVM's implementations (49 against 787 us for 200 KB
// on the development machine), which a warm first call pays for each of its files.
std::string blake3Hex(llvm::StringRef bytes) {
  return llvm::toHex(llvm::BLAKE3::hash(llvm::arrayRefFromStringRef(bytes)), /*LowerCase=*/true);
}

// A plain file name inside the entry folder. Leading dots are refused so that no artifact can
// collide with a temp file or escape the folder via "..".
bool isPlainName(const std::string &name) {
  return !name.empty() && name.front() != '.' && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

std::string metadataName(const std::string &kernelName) { return kernelName + ".json"; }

// Compact json with sorted keys: the text metadata_blake3 hashes, and values in warnings.
std::string jsonText(const llvm::json::Value &v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << v;
  return text;
}

void checkEntryNames(const CacheEntry &entry) {
  if (!isPlainName(entry.kernelName))
    internalError("cache: invalid kernel name '" + entry.kernelName + "'");
  for (const auto &[name, bytes] : entry.files)
    if (!isPlainName(name) || name == metadataName(entry.kernelName))
      internalError("cache: invalid file name '" + name + "' for kernel " + entry.kernelName);
}

// Unique per process and per write: pid plus a per-process random seed (pids repeat across
// containers sharing a cache) plus a counter (threads of one process).
std::string tmpName(const std::string &name) {
  static const uint64_t Seed = std::random_device{}();
  static std::atomic<uint64_t> Counter{0};
  uint64_t n = (Seed << 20) + Counter.fetch_add(1);
  return TmpPrefix + std::to_string(::getpid()) + "." + std::to_string(n) + "." + name;
}


// Removes temp files left by writers that crashed long ago; best effort.
void sweepStaleTmpFiles(const fs::path &dir) {
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with(TmpPrefix))
      continue;
    std::error_code timeEc;
    auto mtime = fs::last_write_time(it->path(), timeEc);
    if (!timeEc && now - mtime > StaleTmpAge) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

} // namespace

// Writes `bytes` to dir/name via a temp file and a rename. Returns an error description, or an
// empty string on success. No fsync: a torn file after a power loss fails the hash check instead.
std::string writeFileAtomically(const fs::path &dir, const std::string &name,
                                const std::string &bytes) {
  fs::path tmp = dir / tmpName(name);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return "cannot create " + tmp.string();
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return "cannot write " + tmp.string();
    }
  }
  std::error_code ec;
  fs::rename(tmp, dir / name, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return "cannot rename " + tmp.string() + " into place: " + ec.message();
  }
  return "";
}

std::optional<std::string> readFile(const fs::path &path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad())
    return std::nullopt;
  return std::move(buf).str();
}

fs::path defaultCacheDir() {
  if (const char *dir = std::getenv("TRITIUM_CACHE_DIR"); dir && *dir)
    return fs::path(dir);
  if (const char *home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "tritium";
  return fs::path("/tmp/tritium-cache");
}

std::string cacheKey(const std::vector<std::pair<std::string, std::string>> &parts) {
  // "<len>:<bytes>" per name and value: the digits end at ':', so the split is unambiguous.
  llvm::SHA256 hasher;
  hasher.update(llvm::StringRef("tritium-cache-key-v1\n"));
  auto add = [&](const std::string &s) {
    hasher.update(llvm::StringRef(std::to_string(s.size()) + ":"));
    hasher.update(llvm::StringRef(s));
  };
  for (const auto &[name, value] : parts) {
    add(name);
    add(value);
  }
  return llvm::toHex(hasher.final(), /*LowerCase=*/true);
}

DiskCache::DiskCache(fs::path root) : root_(std::move(root)) {}

fs::path DiskCache::entryDir(const std::string &key) const {
  if (!isPlainName(key))
    internalError("cache: invalid key '" + key + "'");
  return root_ / key;
}

void DiskCache::discard(const fs::path &dir, const std::string &kernelName,
                        const std::string &why) {
  log().warn("cache: entry {} ({}) is unusable: {}; removing it so that it is rebuilt",
             dir.string(), kernelName, why);
  // Renamed first, so that two processes finding the same bad entry do not trip over each
  // other's removal: the loser of the rename finds nothing left to do.
  std::error_code ec;
  fs::path doomed = root_ / tmpName(dir.filename().string() + ".removed");
  fs::rename(dir, doomed, ec);
  if (ec == std::errc::no_such_file_or_directory)
    return; // already gone
  if (ec)
    doomed = dir; // e.g. the root is read-only for renames: remove in place
  fs::remove_all(doomed, ec);
  std::error_code ignored;
  if (ec && ec != std::errc::no_such_file_or_directory && fs::exists(doomed, ignored))
    log().warn("cache: cannot remove {}: {}", doomed.string(), ec.message());
}

std::optional<CacheEntry> DiskCache::load(const std::string &key, const std::string &kernelName,
                                          const CacheExpectation &expect) {
  if (!isPlainName(kernelName))
    internalError("cache: invalid kernel name '" + kernelName + "'");
  fs::path dir = entryDir(key);
  fs::path jsonPath = dir / metadataName(kernelName);
  std::error_code ec;
  if (!fs::exists(jsonPath, ec)) {
    log().debug("cache miss: no {} in {}", metadataName(kernelName), dir.string());
    return std::nullopt;
  }
  auto reject = [&](const std::string &why) -> std::optional<CacheEntry> {
    discard(dir, kernelName, why);
    return std::nullopt;
  };

  std::optional<std::string> text = readFile(jsonPath);
  if (!text)
    return reject("cannot read " + metadataName(kernelName));
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*text);
  if (!parsed)
    return reject("invalid json: " + llvm::toString(parsed.takeError()));
  llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return reject("json is not an object");
  std::optional<llvm::StringRef> storedKey = root->getString("key");
  if (!storedKey || *storedKey != key)
    return reject("json key does not match " + key);

  // What was asked for, field by field, so the warning can name the one that differs.
  for (const auto &[field, want] : expect.fields) {
    const llvm::json::Value *got = root->get(field);
    if (!got)
      return reject("the json has no \"" + field.str() + "\", expected " + jsonText(want));
    if (*got != want)
      return reject("\"" + field.str() + "\" is " + jsonText(*got) + " in the json, expected " +
                    jsonText(want));
  }
  for (const std::string &field : expect.counts) {
    std::optional<int64_t> n = root->getInteger(field);
    if (!n || *n < 0)
      return reject("\"" + field + "\" is " +
                    (root->get(field) ? jsonText(*root->get(field)) : std::string("missing")) +
                    " in the json, expected a count");
  }
  // Then everything else the record says, through its own hash.
  std::optional<llvm::StringRef> recorded = root->getString("metadata_blake3");
  if (!recorded)
    return reject("the json has no metadata_blake3");
  std::string recordedHash = recorded->str();
  root->erase("metadata_blake3");
  if (blake3Hex(jsonText(llvm::json::Value(llvm::json::Object(*root)))) != recordedHash)
    return reject("the json's fields do not match its metadata_blake3 (edited after it was "
                  "written)");

  const llvm::json::Object *listed = root->getObject("files");
  if (!listed)
    return reject("json has no \"files\" object");
  for (const std::string &name : expect.requiredFiles)
    if (!listed->get(name))
      return reject("required file " + name + " is not listed");

  CacheEntry entry;
  entry.kernelName = kernelName;
  for (const auto &[nameKey, info] : *listed) {
    std::string name = nameKey.str();
    const llvm::json::Object *fields = info.getAsObject();
    std::optional<int64_t> size = fields ? fields->getInteger("bytes") : std::nullopt;
    std::optional<llvm::StringRef> hash = fields ? fields->getString("blake3") : std::nullopt;
    if (!isPlainName(name) || !size || !hash)
      return reject("bad listing for file '" + name + "'");
    std::optional<std::string> bytes = readFile(dir / name);
    if (!bytes)
      return reject("missing file " + name);
    if (static_cast<int64_t>(bytes->size()) != *size)
      return reject(name + " has " + std::to_string(bytes->size()) + " bytes, expected " +
                    std::to_string(*size));
    if (blake3Hex(*bytes) != *hash)
      return reject(name + " does not match its blake3 hash");
    entry.files.emplace(std::move(name), std::move(*bytes));
  }

  root->erase("files");
  root->erase("key");
  entry.metadata = std::move(*root);
  log().debug("cache hit: loaded {} from {}", kernelName, dir.string());
  return entry;
}

void DiskCache::commit(const std::string &key, const std::string &kernelName,
                       const std::map<std::string, std::string> &toWrite,
                       const std::map<std::string, std::string> &allFiles,
                       const llvm::json::Object &metadata) {
  fs::path dir = entryDir(key);
  // The error_code overloads don't throw, but allocation and path conversion can; the catch
  // keeps the promise that caching failures never escape.
  try {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      log().warn("cache: cannot create {} ({}); continuing without caching", dir.string(),
                 ec ? ec.message() : "not a directory");
      return;
    }
    for (const auto &[name, bytes] : toWrite) {
      if (std::string err = writeFileAtomically(dir, name, bytes); !err.empty()) {
        log().warn("cache: {}; continuing without caching", err);
        return;
      }
    }

    llvm::json::Object manifest;
    for (const auto &[name, bytes] : allFiles)
      manifest[name] = llvm::json::Object{{"bytes", static_cast<int64_t>(bytes.size())},
                                          {"blake3", blake3Hex(bytes)}};
    llvm::json::Object record = metadata;
    record.erase("metadata_blake3");
    record["files"] = std::move(manifest);
    record["key"] = key;
    record["metadata_blake3"] = blake3Hex(jsonText(llvm::json::Value(llvm::json::Object(record))));
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(record))) << "\n";
    os.flush();

    // The commit point: until this rename, readers see the old entry or none.
    if (std::string err = writeFileAtomically(dir, metadataName(kernelName), text); !err.empty()) {
      log().warn("cache: {}; continuing without caching", err);
      return;
    }
    sweepStaleTmpFiles(dir);
    log().debug("cache: stored {} in {}", kernelName, dir.string());
  } catch (const std::exception &e) {
    log().warn("cache: cannot store {} in {}: {}; continuing without caching", kernelName,
               dir.string(), e.what());
  }
}

void DiskCache::store(const std::string &key, const CacheEntry &entry) {
  checkEntryNames(entry);
  commit(key, entry.kernelName, entry.files, entry.files, entry.metadata);
}

void DiskCache::addFiles(const std::string &key, const CacheEntry &entry) {
  checkEntryNames(entry);
  std::optional<CacheEntry> existing = load(key, entry.kernelName);
  if (!existing) {
    commit(key, entry.kernelName, entry.files, entry.files, entry.metadata);
    return;
  }
  // Old files are already on disk and verified; only the new ones need writing.
  std::map<std::string, std::string> all = entry.files;
  all.insert(existing->files.begin(), existing->files.end()); // new bytes win on a clash
  llvm::json::Object metadata = std::move(existing->metadata);
  for (const auto &[field, value] : entry.metadata)
    metadata[field] = value;
  commit(key, entry.kernelName, entry.files, all, metadata);
}

} // namespace tritium::rt
