// The checks of kernel declarations and specializations, with the words docs/LIMITS.md quotes.
#include "frontend/Limits.h"

#include "compiler/Targets.h"
#include "frontend/Kernel.h"

#include <bit>
#include <cstdio>
#include <utility>

namespace tritium {

namespace {

constexpr size_t MaxNameLength = 200;

// The name as it can be printed: control bytes escaped, long names cut.
std::string printable(const std::string &name) {
  std::string out;
  for (size_t i = 0; i < name.size() && i < 60; ++i) {
    unsigned char c = name[i];
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (name.size() > 60)
    out += "...";
  return out;
}

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Why `name` is not an identifier of at most MaxNameLength characters, or "".
std::string identifierProblem(const std::string &name) {
  if (name.empty())
    return "it is empty";
  if (name.size() > MaxNameLength)
    return "it is " + std::to_string(name.size()) + " characters long (at most " +
           std::to_string(MaxNameLength) + ")";
  if (name[0] >= '0' && name[0] <= '9')
    return "it starts with a digit";
  for (char c : name)
    if (!isIdentChar(c))
      return "it contains '" + printable(std::string(1, c)) + "'";
  return "";
}

std::string field(const char *name) { return std::string(" (Specialization::") + name + ")"; }

} // namespace

void checkKernelName(const std::string &name, const SourceLoc &declaredAt) {
  if (std::string why = identifierProblem(name); !why.empty())
    userError("invalid kernel name '" + printable(name) + "': " + why +
                  "; a kernel name is 1 to 200 letters, digits and underscores, not starting "
                  "with a digit (it names the PTX entry and the cache files)",
              declaredAt);
}

void checkParamNames(const std::string &kernel, const std::vector<std::string> &names,
                     const SourceLoc &declaredAt) {
  for (size_t i = 0; i < names.size(); ++i) {
    std::string what = "parameter " + std::to_string(i) + " of kernel '" + kernel + "'";
    if (names[i].empty())
      userError(what + " has an empty name", declaredAt);
    if (std::string why = identifierProblem(names[i]); !why.empty())
      userError(what + " is named '" + printable(names[i]) + "', which is not an identifier: " +
                    why + " (parameter names are letters, digits and underscores, not starting "
                          "with a digit)",
                declaredAt);
    for (size_t j = 0; j < i; ++j)
      if (names[j] == names[i])
        userError(what + " is named '" + names[i] + "' like parameter " + std::to_string(j) +
                      "; parameter names must be different",
                  declaredAt);
  }
}

void checkSpecialization(const std::string &kernel, const Specialization &spec,
                         const SourceLoc &declaredAt) {
  std::string k = "kernel '" + kernel + "': ";
  auto fail = [&](const std::string &msg) { userError(k + msg, declaredAt); };
  if (std::string bad = checkArch(spec.arch); !bad.empty())
    fail(bad + field("arch"));
  if (std::string bad = checkPtxVersion(spec.ptxVersion, spec.arch); !bad.empty())
    fail(bad + field("ptxVersion"));
  if (spec.numWarps < 1 || spec.numWarps > 32 || !std::has_single_bit(unsigned(spec.numWarps)))
    fail("num_warps must be a power of two from 1 to 32, got " + std::to_string(spec.numWarps) +
         field("numWarps"));
  if (spec.numStages < 1)
    fail("num_stages must be at least 1 (1: no pipelining), got " +
         std::to_string(spec.numStages) + field("numStages"));
  if (spec.clusterSize < 1 || spec.clusterSize > 16)
    fail("cluster size must be from 1 to 16 (8 is the portable limit of thread-block clusters, "
         "16 the limit on Hopper), got " +
         std::to_string(spec.clusterSize) + field("clusterSize"));
  if (spec.minBlocksPerSM < 1 || spec.minBlocksPerSM > 32)
    fail("minBlocksPerSM must be from 1 to 32, got " + std::to_string(spec.minBlocksPerSM) +
         field("minBlocksPerSM"));
  if (spec.programsPerCTA < 1 || spec.programsPerCTA > 32)
    fail("programsPerCTA must be from 1 to 32, got " + std::to_string(spec.programsPerCTA) +
         field("programsPerCTA"));
}

void checkConstexpr(const std::string &kernel, const std::string &param, int64_t value,
                    const ConstexprRange &range, const Specialization &spec,
                    const SourceLoc &declaredAt) {
  std::string what = "compile-time parameter '" + param + "' of kernel '" + kernel + "'";
  if (value < range.min || value > range.max)
    userError(what + " is a " + range.type + " (" + std::to_string(range.min) + " to " +
                  std::to_string(range.max) + ") but the specialization gives " +
                  std::to_string(value) + ", which it cannot hold",
              declaredAt);
  if (param == "shared_bytes" || param == "cluster_barriers")
    userError(what + " is named like an attribute the compiler sets: rename it", declaredAt);
  const std::pair<const char *, std::pair<const char *, int>> attrs[] = {
      {"num_warps", {"numWarps", spec.numWarps}},
      {"cluster_size", {"clusterSize", spec.clusterSize}},
      {"min_blocks_per_sm", {"minBlocksPerSM", spec.minBlocksPerSM}},
      {"programs_per_cta", {"programsPerCTA", spec.programsPerCTA}}};
  for (const auto &[attr, fieldValue] : attrs)
    if (param == attr && value != fieldValue.second)
      userError(what + " is " + std::to_string(value) + " but the specialization's " + attr +
                    " is " + std::to_string(fieldValue.second) + field(fieldValue.first) +
                    "; the kernel's " + attr + " attribute holds one value: give both the same "
                    "value or rename the parameter",
                declaredAt);
}

} // namespace tritium
