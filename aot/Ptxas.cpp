// Running ptxas in a private temporary folder through posix_spawn (no shell, so no quoting),
// and reading back the cubin and its verbose report.
#include "aot/Ptxas.h"

#include "compiler/support/Error.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tritium::aot {

namespace fs = std::filesystem;

namespace {

const char *kToolkitPtxas = "/usr/local/cuda/bin/ptxas";

bool isExecutable(const fs::path &p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string readAll(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A folder only this process writes into, removed on every path out.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tritium-aot-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw UserError("cannot create a temporary folder for ptxas under " +
                      fs::temp_directory_path().string());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

} // namespace

std::string findPtxas() {
  if (const char *env = std::getenv("TRITIUM_PTXAS"); env && *env) {
    if (!isExecutable(env))
      throw UserError(std::string("TRITIUM_PTXAS names '") + env +
                      "', which is not an executable file; point it to the CUDA toolkit's ptxas "
                      "or unset it to search PATH and " + kToolkitPtxas);
    return env;
  }
  std::string searched = "TRITIUM_PTXAS (unset)";
  if (const char *path = std::getenv("PATH"); path && *path) {
    std::string dirs = path;
    for (size_t pos = 0; pos <= dirs.size();) {
      size_t colon = dirs.find(':', pos);
      if (colon == std::string::npos)
        colon = dirs.size();
      std::string dir = dirs.substr(pos, colon - pos);
      if (!dir.empty() && isExecutable(fs::path(dir) / "ptxas"))
        return (fs::path(dir) / "ptxas").string();
      pos = colon + 1;
    }
    searched += ", ptxas on PATH";
  }
  if (isExecutable(kToolkitPtxas))
    return kToolkitPtxas;
  throw UserError("ptxas not found (searched " + searched + ", " + kToolkitPtxas +
                  "); ahead-of-time kernels need the CUDA toolkit's ptxas to make a cubin: set "
                  "TRITIUM_PTXAS to its path");
}

void parseReport(const std::string &log, const std::string &entry, PtxasResult &out) {
  // The report lists every function; the numbers after "Compiling entry function '<entry>'"
  // and before the next entry are the kernel's.
  size_t begin = log.find("entry function '" + entry + "'");
  if (begin == std::string::npos)
    begin = 0;
  size_t end = log.find("Compiling entry function", begin + 1);
  std::string part = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  std::smatch m;
  if (std::regex_search(part, m, std::regex(R"(Used (\d+) registers)")))
    out.registers = std::stoi(m[1]);
  if (std::regex_search(part, m, std::regex(R"((\d+) bytes stack frame)")))
    out.stackBytes = std::stoi(m[1]);
  if (std::regex_search(part, m, std::regex(R"((\d+) bytes spill stores)")))
    out.spillStoreBytes = std::stoi(m[1]);
  if (std::regex_search(part, m, std::regex(R"((\d+) bytes spill loads)")))
    out.spillLoadBytes = std::stoi(m[1]);
  if (std::regex_search(part, m, std::regex(R"((\d+) bytes smem)")))
    out.staticSharedBytes = std::stoi(m[1]);
}

namespace {

// Runs `args` (args[0] the program) with stdout and stderr into `logFile`; its exit status, or
// -1 when it did not exit normally.
int runCaptured(std::vector<std::string> args, const fs::path &logFile) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw UserError("cannot run ptxas at '" + args[0] + "': " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

std::string ptxasVersion(const std::string &ptxasPath) {
  TempDir dir;
  fs::path logFile = dir.path / "version.log";
  if (runCaptured({ptxasPath, "--version"}, logFile) != 0)
    throw UserError("'" + ptxasPath + " --version' failed:\n" + readAll(logFile));
  // "Cuda compilation tools, release 13.0, V13.0.48": the line that names the release.
  std::istringstream lines(readAll(logFile));
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.find("release") != std::string::npos)
      return line;
    if (!line.empty())
      last = line;
  }
  return last;
}

PtxasResult assemble(const std::string &ptx, const std::string &arch, const std::string &entry,
                     const std::string &ptxasPath) {
  TempDir dir;
  // Fixed names inside the private folder: the cubin does not depend on where it was made.
  fs::path in = dir.path / (entry + ".ptx"), out = dir.path / (entry + ".cubin"),
           logFile = dir.path / "ptxas.log";
  {
    std::ofstream f(in, std::ios::binary);
    f << ptx;
    if (!f)
      throw UserError("cannot write " + in.string() + " for ptxas");
  }
  std::string archFlag = "-arch=" + arch;
  int status = runCaptured({ptxasPath, archFlag, "-v", in.string(), "-o", out.string()}, logFile);
  PtxasResult r;
  r.log = readAll(logFile);
  if (status != 0)
    throw UserError("ptxas (" + ptxasPath + " " + archFlag + ") failed for kernel '" + entry +
                    "':\n" + r.log);
  r.cubin = readAll(out);
  if (r.cubin.empty())
    throw UserError("ptxas (" + ptxasPath + ") wrote no cubin for kernel '" + entry + "'");
  parseReport(r.log, entry, r);
  return r;
}

} // namespace tritium::aot
