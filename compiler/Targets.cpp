// The supported architectures and PTX ISA versions, and the words used to refuse others.
#include "compiler/Targets.h"

#include <algorithm>
#include <cstdlib>

namespace tritium {

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> Archs = {"sm_80", "sm_86", "sm_87",
                                                 "sm_89", "sm_90", "sm_90a"};
  return Archs;
}

const std::vector<int> &supportedPtxVersions() {
  // llc -march=nvptx64 -mattr=help lists ptx32 ... ptx88 and ptx90 for LLVM 22; below 7.8 the
  // ISA lacks sm_89 and sm_90 (and the mbarrier waits the pipeliner uses).
  static const std::vector<int> Versions = {78, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90};
  return Versions;
}

int smNumber(const std::string &arch) {
  return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
}

std::string checkArch(const std::string &arch) {
  const auto &archs = supportedArchs();
  if (std::find(archs.begin(), archs.end(), arch) != archs.end())
    return "";
  std::string list;
  for (const std::string &a : archs)
    list += (list.empty() ? "" : ", ") + a;
  return "unknown GPU architecture '" + arch + "'; tritium compiles for " + list;
}

std::string checkPtxVersion(int ptxVersion, const std::string &arch) {
  const auto &versions = supportedPtxVersions();
  if (std::find(versions.begin(), versions.end(), ptxVersion) == versions.end())
    return "PTX version " + std::to_string(ptxVersion) +
           " is not supported; give the PTX ISA version times 10: 78, 80 to 88, or 90 (those "
           "LLVM 22 emits for sm_80 and later)";
  if (arch == "sm_90a" && ptxVersion < 80)
    return "sm_90a needs PTX version 80 or later, got " + std::to_string(ptxVersion);
  return "";
}

} // namespace tritium
