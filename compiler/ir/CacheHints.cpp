// The cache operators and eviction priorities of loads and stores (see CacheHints.h).
#include "compiler/ir/CacheHints.h"

#include <algorithm>

namespace tritium::ir {

const std::vector<std::string> &loadCacheModifiers() {
  static const std::vector<std::string> list{"ca", "cg", "cs", "lu", "cv"};
  return list;
}

const std::vector<std::string> &storeCacheModifiers() {
  static const std::vector<std::string> list{"wb", "cg", "cs", "wt"};
  return list;
}

const std::vector<std::string> &evictionPolicies() {
  static const std::vector<std::string> list{"evict_first", "evict_last"};
  return list;
}

bool isOneOf(const std::string &s, const std::vector<std::string> &list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string joinNames(const std::vector<std::string> &list) {
  std::string out;
  for (const std::string &s : list)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

} // namespace tritium::ir
