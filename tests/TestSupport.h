// Shared helpers of the test suite: a private disk-cache root per test, and running ptxas.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace tritium::testing {

// A fresh seed, recorded in the test's output so that a failure can be replayed.
inline uint32_t freshSeed() {
  uint32_t seed = std::random_device{}();
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}


// A fresh, empty temporary directory, removed (with its contents) on destruction.
class ScopedTempDir {
public:
  explicit ScopedTempDir(const std::string &prefix = "tritium-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data()))
      throw std::runtime_error("mkdtemp failed for " + tmpl);
    dir_ = tmpl;
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScopedTempDir(const ScopedTempDir &) = delete;
  ScopedTempDir &operator=(const ScopedTempDir &) = delete;
  const std::filesystem::path &path() const { return dir_; }

private:
  std::filesystem::path dir_;
};

// Points TRITIUM_CACHE_DIR at a fresh temporary directory for its lifetime, then restores the
// previous value and removes the directory. Tests never touch ~/.cache and never see each
// other's entries.
class ScopedCacheDir {
public:
  ScopedCacheDir() : dir_("tritium-test-cache") {
    if (const char *old = std::getenv("TRITIUM_CACHE_DIR"))
      old_ = old;
    ::setenv("TRITIUM_CACHE_DIR", dir_.path().c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (old_)
      ::setenv("TRITIUM_CACHE_DIR", old_->c_str(), 1);
    else
      ::unsetenv("TRITIUM_CACHE_DIR");
  }
  ScopedCacheDir(const ScopedCacheDir &) = delete;
  ScopedCacheDir &operator=(const ScopedCacheDir &) = delete;
  const std::filesystem::path &path() const { return dir_.path(); }

private:
  ScopedTempDir dir_;
  std::optional<std::string> old_;
};

// A fixture for every test that compiles kernels: each test gets its own cache root.
class CompilerTest : public ::testing::Test {
protected:
  const std::filesystem::path &cacheDir() const { return cache_.path(); }

private:
  ScopedCacheDir cache_;
};

// The ptxas found at configure time ("" when none).
// A file of tests/data: the source tree's copy where the tests were built, else the one under
// the working directory (the GPU machine runs the bundle from a copy of the repository).
inline std::string testDataPath(const std::string &name) {
  std::filesystem::path built = std::filesystem::path(TRITIUM_TEST_DATA) / name;
  if (std::filesystem::exists(built))
    return built.string();
  return (std::filesystem::path("tests/data") / name).string();
}

inline std::string ptxasPath() {
#ifdef TRITIUM_PTXAS
  return TRITIUM_PTXAS;
#else
  return "";
#endif
}

struct PtxasResult {
  int exitCode = -1;
  std::string output; // stdout and stderr together (-v writes its report to stderr)
};

// Assembles `ptx` with `ptxas -arch=<arch> -v` into a throw-away cubin.
inline PtxasResult runPtxas(const std::string &ptx, const std::string &arch) {
  ScopedTempDir scratch("tritium-ptxas");
  std::filesystem::path in = scratch.path() / "kernel.ptx", out = scratch.path() / "kernel.cubin";
  std::ofstream(in, std::ios::binary) << ptx;
  std::string cmd = "'" + ptxasPath() + "' -arch=" + arch + " -v '" + in.string() + "' -o '" +
                    out.string() + "' 2>&1";
  PtxasResult r;
  FILE *p = ::popen(cmd.c_str(), "r");
  if (!p) {
    r.output = "popen failed for: " + cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    r.output.append(buf, n);
  int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

} // namespace tritium::testing
