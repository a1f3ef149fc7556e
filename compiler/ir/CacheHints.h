// The cache hints a load or store may carry, as attributes (Triton's cache_modifier and
// eviction_policy): {cache = "cg"} is a PTX cache operator, {evict = "evict_first"} an eviction
// priority. They are listed once here for the DSL, the verifier and the lowering; PTX takes a
// different set of cache operators on ld and st, so each op has its own list.
#pragma once

#include <string>
#include <vector>

namespace tritium::ir {

// PTX's cache operators: ld.global takes .ca .cg .cs .lu .cv, st.global .wb .cg .cs .wt.
const std::vector<std::string> &loadCacheModifiers();
const std::vector<std::string> &storeCacheModifiers();
// Eviction priorities: "evict_first", "evict_last" (no attribute: the default, evict_normal).
const std::vector<std::string> &evictionPolicies();
bool isOneOf(const std::string &s, const std::vector<std::string> &list);
std::string joinNames(const std::vector<std::string> &list); // "ca, cg, cs"

} // namespace tritium::ir
