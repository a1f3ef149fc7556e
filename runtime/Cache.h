// The on-disk kernel cache (like Triton's TRITON_CACHE_DIR): one folder per cache key holding the
// artifacts of one compiled kernel (.tir, .gir, .ll, .ptx, .cubin) plus a JSON metadata file that
// is written last and serves as the commit record, so a crashed or concurrent writer can never
// make a half-written entry look valid.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/CacheDir.h"

#include "llvm/Support/JSON.h"

namespace tritium::rt {


// Writes `bytes` to dir/name through a uniquely named temporary file and a rename, so readers
// see the old file or the whole new one. Returns "" or what failed.
std::string writeFileAtomically(const std::filesystem::path &dir, const std::string &name,
                                const std::string &bytes);
// A regular file's bytes, or nullopt.
std::optional<std::string> readFile(const std::filesystem::path &path);

// SHA-256 (64 lowercase hex chars) of (name, value) parts such as ir, signature, specialization,
// arch, ptx_version, num_warps, num_stages, tritium_version, source_fingerprint and llvm_version.
// Each name and value is length-prefixed, so no two different part lists hash the same bytes.
// Order matters.
std::string cacheKey(const std::vector<std::pair<std::string, std::string>> &parts);

// One compiled kernel's artifacts.
struct CacheEntry {
  std::string kernelName;
  // File name -> contents, excluding the metadata json. Names must be plain file names (no path
  // separators, not starting with '.', not "<kernelName>.json").
  std::map<std::string, std::string> files;
  // Free-form fields from the compiler (num_warps, shared, regs, ...). The keys "files" and "key"
  // are reserved for the cache's own bookkeeping and are overwritten / stripped.
  llvm::json::Object metadata;
};

// What the asker knows an entry must hold, beyond what the entry says about itself: load checks
// it, so a json edited by hand (or written by other code) cannot pass for the asked-for kernel.
struct CacheExpectation {
  // Files that must be present and match the size and BLAKE3 hash recorded for them, whether or not
  // the json lists them (a file dropped from the listing is as bad as a file lost).
  std::vector<std::string> requiredFiles;
  // Metadata fields that must hold exactly these values: the kernel's name, every field of the
  // specialization, the compiler's version.
  llvm::json::Object fields;
  // Metadata fields that must hold non-negative integers (results such as "shared").
  std::vector<std::string> counts;
};

// A cache rooted at one directory; entries live in <root>/<key>/ and the commit record is
// <root>/<key>/<kernelName>.json, holding the metadata plus "key", a "files" object mapping
// each file name to {"bytes": N, "blake3": "<hex>"}, and "metadata_blake3", the BLAKE3 hash of
// the rest of the record (compact, keys sorted), so an edited field is caught as a changed byte
// is.
//
// The cache is only an optimization, so I/O failures never escape: store/addFiles log a warning
// and return (compilation continues uncached) when the root cannot be created or written, and
// load treats every problem as a miss. Only misuse (an invalid key or file name) throws, as an
// InternalError.
class DiskCache {
public:
  explicit DiskCache(std::filesystem::path root = defaultCacheDir());

  const std::filesystem::path &root() const { return root_; }
  std::filesystem::path entryDir(const std::string &key) const;

  // The verified entry, or nullopt. A missing json is a plain miss (debug log). A json that does
  // not parse, names another key, fails its metadata_blake3, lists a file that is missing or
  // differs in size or BLAKE3 hash, or does not meet `expect` makes the entry unusable: a warning
  // names the entry and what did not match, and its folder is removed so that it is rebuilt.
  std::optional<CacheEntry> load(const std::string &key, const std::string &kernelName,
                                 const CacheExpectation &expect = {});

  // Writes every file atomically (temp file + rename), then the json last. Concurrent stores of
  // the same key are safe: each file's last rename wins and both writers produce the same bytes.
  // Never throws on I/O failure (unwritable root, a file in the way, full disk): it logs a
  // warning and leaves no committed entry behind.
  void store(const std::string &key, const CacheEntry &entry);

  // Adds entry.files to an existing entry (e.g. the cubin, known only after loading on a GPU) and
  // rewrites its metadata: existing fields are kept unless entry.metadata overrides them. When no
  // valid entry exists this behaves like store. Same failure policy as store.
  void addFiles(const std::string &key, const CacheEntry &entry);

private:
  // Writes the given files, then the json listing `allFiles` (a superset of `toWrite`).
  void commit(const std::string &key, const std::string &kernelName,
              const std::map<std::string, std::string> &toWrite,
              const std::map<std::string, std::string> &allFiles,
              const llvm::json::Object &metadata);
  // Logs why the entry is unusable and removes its folder. Another process removing it at the
  // same time is no failure: the folder is first renamed to a name of this call's own.
  void discard(const std::filesystem::path &dir, const std::string &kernelName,
               const std::string &why);

  std::filesystem::path root_;
};

} // namespace tritium::rt
