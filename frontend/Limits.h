// What a kernel declaration and a specialization may hold, checked before anything is traced:
// every name, compile-time value and specialization field out of range is a UserError that
// names it and points at the kernel's declaration (docs/LIMITS.md lists the limits).
#pragma once

#include "compiler/support/Error.h"

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace tritium {

struct Specialization;

// The values a compile-time parameter's C++ type holds: a constexpr is given as int64_t and
// converted to the parameter's type, which must not wrap it (2^40 into an int is not 0).
struct ConstexprRange {
  int64_t min = 0;
  int64_t max = 0;
  std::string type; // "32-bit signed integer", "bool", ...
};

template <typename T> ConstexprRange constexprRangeOf() {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_integral_v<U>) {
    using L = std::numeric_limits<U>;
    ConstexprRange r;
    r.min = std::is_signed_v<U> ? int64_t(L::min()) : 0;
    r.max = uint64_t(L::max()) > uint64_t(std::numeric_limits<int64_t>::max())
                ? std::numeric_limits<int64_t>::max()
                : int64_t(L::max());
    r.type = std::is_same_v<U, bool> ? std::string("bool")
                                     : std::to_string(8 * sizeof(U)) + "-bit " +
                                           (std::is_signed_v<U> ? "signed" : "unsigned") +
                                           " integer";
    return r;
  } else {
    return {}; // a runtime parameter: no compile-time value
  }
}

// Kernel names name the PTX entry and the cache and dump files: 1 to 200 letters, digits and
// underscores, not starting with a digit.
void checkKernelName(const std::string &name, const SourceLoc &declaredAt);
// Parameter names name IR arguments and metadata: identifiers as above, all different.
void checkParamNames(const std::string &kernel, const std::vector<std::string> &names,
                     const SourceLoc &declaredAt);
// Every field of `spec` but the signature and constexprs (the kernel checks those against its
// parameters): num_warps, num_stages, cluster size, minBlocksPerSM, programsPerCTA, arch and
// PTX version.
void checkSpecialization(const std::string &kernel, const Specialization &spec,
                         const SourceLoc &declaredAt);
// A compile-time value against the C++ type of the parameter `param` it is passed to. A
// parameter named like an attribute the specialization gives the kernel (num_warps,
// cluster_size, min_blocks_per_sm, programs_per_cta) must have the same value, as the traced
// kernel holds one of them only; shared_bytes and cluster_barriers are the compiler's. One named
// num_stages may differ: it becomes the default depth of range() loops, as Triton's does.
void checkConstexpr(const std::string &kernel, const std::string &param, int64_t value,
                    const ConstexprRange &range, const Specialization &spec,
                    const SourceLoc &declaredAt);

} // namespace tritium
