// The text of the generated header and source (docs/AOT.md shows their anatomy). Everything in
// them follows from the inputs: no time, no path, no host name, so two runs give the same bytes
// and a diff shows what changed in the kernels.
#include "aot/CompiledVariant.h"

#include "aot/CText.h"
#include "aot/LauncherRuntime.h"
#include "runtime/Cache.h"
#include "runtime/TensorMap.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#ifndef TRITIUM_VERSION
#error "TRITIUM_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace tritium::aot {

namespace {

// Replaced by the hash of both files once their text is complete.
const std::string kStampPlaceholder = "@TRITIUM_AOT_STAMP@";

std::string upper(std::string s) {
  for (char &c : s)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "CUdeviceptr output_ptr, CUdeviceptr input_ptr, int32_t n_rows"
std::string declaredParams(const CompiledVariant &v) {
  std::string s;
  for (const LauncherParam &p : v.params)
    s += ", " + p.cType + " " + p.name;
  return s;
}

// "output_ptr, input_ptr, n_rows"
std::string passedArgs(const CompiledVariant &v) {
  std::string s;
  for (const LauncherParam &p : v.params)
    s += ", " + p.name;
  return s;
}

// "  void *params[] = {&output_ptr, &input_ptr, &n_rows};\n": the launch's parameter array,
// after the kernel's CUtensorMaps are encoded where it has some (they follow the arguments).
std::string paramPointers(const CompiledVariant &v) {
  std::string s;
  size_t maps = v.tensorMaps.size();
  if (maps)
    s += "  CUtensorMap maps[" + std::to_string(maps) + "];\n  if (CUresult r = " +
         v.variant.name + "_tensor_maps(maps" + passedArgs(v) + "); r != CUDA_SUCCESS)\n" +
         "    return r;\n";
  s += "  void *params[] = {";
  for (size_t i = 0; i < v.params.size(); ++i)
    s += (i ? ", &" : "&") + v.params[i].name;
  for (size_t i = 0; i < maps; ++i)
    s += ", &maps[" + std::to_string(i) + "]";
  return s + "};\n";
}

// A recipe's number as C: "(int64_t)(n_cols) * 4 / 1" or a constant.
std::string termText(const CompiledVariant &v, const ir::TensorMapTerm &t) {
  if (t.arg < 0)
    return std::to_string(t.scale / t.divisor);
  return "(int64_t)(" + v.params.at(size_t(t.arg)).name + ") * " + std::to_string(t.scale) +
         " / " + std::to_string(t.divisor);
}

// <name>_tensor_maps: encodes the kernel's CUtensorMaps from the launch's arguments, as
// tritium's runtime does at JIT time (an error names the recipe); empty without any.
std::string tensorMapsFunction(const CompiledVariant &v) {
  if (v.tensorMaps.empty())
    return "";
  const std::string &n = v.variant.name;
  std::ostringstream o;
  o << "// The kernel's CUtensorMaps (TMA copies and stores), from the arguments.\n"
    << "CUresult " << n << "_tensor_maps(CUtensorMap *maps" << declaredParams(v) << ") {\n";
  for (const LauncherParam &p : v.params)
    o << "  (void)" << p.name << ";\n";
  for (size_t i = 0; i < v.tensorMaps.size(); ++i) {
    const ir::TensorMapRecipe &r = v.tensorMaps[i];
    std::string dims, strides, box;
    for (const ir::TensorMapTerm &t : r.dims)
      dims += (dims.empty() ? "" : ", ") + termText(v, t);
    for (const ir::TensorMapTerm &t : r.strides)
      strides += (strides.empty() ? "" : ", ") + termText(v, t);
    for (int64_t b : r.box)
      box += (box.empty() ? "" : ", ") + std::to_string(b);
    o << "  {\n"
      << "    const int64_t dims[] = {" << dims << "};\n"
      << "    const int64_t strides[] = {" << (strides.empty() ? "0" : strides) << "};\n"
      << "    const unsigned box[] = {" << box << "};\n"
      << "    if (CUresult r = tritium_aot::encodeTensorMap(\"" << n << ": tensor map " << i
      << " '" << r.str() << "'\", &maps[" << i << "], " << rt::tensorMapType(r.dtype).value().name << ", "
      << r.dims.size() << ", uint64_t(" << v.params.at(size_t(r.baseArg)).name
      << "), dims, strides, box, "
      << (r.swizzle == 128  ? "CU_TENSOR_MAP_SWIZZLE_128B"
          : r.swizzle == 64 ? "CU_TENSOR_MAP_SWIZZLE_64B"
          : r.swizzle == 32 ? "CU_TENSOR_MAP_SWIZZLE_32B"
                            : "CU_TENSOR_MAP_SWIZZLE_NONE")
      << ");\n        r != CUDA_SUCCESS)\n      return r;\n  }\n";
  }
  o << "  return CUDA_SUCCESS;\n}\n\n";
  return o.str();
}

std::string joinTypes(const CompiledVariant &v) {
  std::string s;
  for (const LauncherParam &p : v.params)
    s += (s.empty() ? "" : ", ") + p.type;
  return s;
}

std::string joinConstexprs(const CompiledVariant &v) {
  std::string s;
  for (const auto &[name, value] : v.constexprs)
    s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return s.empty() ? "none" : s;
}

std::string joinConditions(const CompiledVariant &v) {
  std::string s;
  for (const Condition &c : v.variant.when)
    s += (s.empty() ? "" : ", ") + c.str();
  return s;
}

std::string hashOf(const std::string &what, const std::string &bytes) {
  return rt::cacheKey({{what, bytes}});
}

// What each file says about where a variant came from.
std::string provenance(const CompiledVariant &v, const std::string &prefix) {
  const Specialization &s = v.variant.spec;
  std::ostringstream o;
  o << prefix << v.variant.name << ": kernel " << v.entry << "\n"
    << prefix << "  kernel hash     " << v.kernelHash << " (its TIR, without source locations)\n"
    << prefix << "  cache key       " << v.cacheKey << " (tritium's disk-cache key)\n"
    << prefix << "  specialization  " << v.specialization << "\n"
    << prefix << "  signature       " << joinTypes(v) << "\n"
    << prefix << "  constexprs      " << joinConstexprs(v) << "\n"
    << prefix << "  target          " << s.arch << " cubin; PTX ISA " << s.ptxVersion / 10 << "."
    << s.ptxVersion % 10 << " fallback\n"
    << prefix << "  launch          " << v.threads << " threads (" << s.numWarps << " warps x "
    << s.programsPerCTA << " programs per CTA"
    << (int64_t(v.threads) > 32 * int64_t(s.numWarps) * s.programsPerCTA ? ", a producer warp" : "")
    << "), cluster " << s.clusterSize << ", " << v.sharedBytes
    << " bytes of dynamic shared memory, grid rule " << gridRuleName(v.variant.grid)
    << (v.waitsOnPriorKernel ? ", overlapping the previous kernel (griddep_wait)" : "")
    << (v.syncsGrid ? ", cooperative (grid_sync)" : "") << "\n"
    << prefix << "  ptxas           " << v.ptxas.registers << " registers, "
    << v.ptxas.spillStoreBytes << " bytes spill stores, " << v.ptxas.spillLoadBytes
    << " bytes spill loads, " << v.ptxas.stackBytes << " bytes stack, " << v.ptxas.staticSharedBytes
    << " bytes static shared\n";
  if (!v.variant.when.empty())
    o << prefix << "  conditions      " << joinConditions(v) << "\n";
  o << prefix << "  cubin           " << v.ptxas.cubin.size() << " bytes, hash "
    << hashOf("cubin", v.ptxas.cubin) << "\n"
    << prefix << "  ptx             " << v.ptx.size() << " bytes, hash " << hashOf("ptx", v.ptx)
    << "\n";
  return o.str();
}

std::string fileHeaderComment(const std::string &file, const Options &options,
                              const std::string &ptxasVersion) {
  std::string s = "// " + file + ": ahead-of-time kernels generated by tritium " TRITIUM_VERSION
                  "; do not edit.\n";
  if (!options.generatedBy.empty())
    s += "// Generated by: " + options.generatedBy + "\n";
  s += "// Cubins by ptxas: " + ptxasVersion + "\n";
  return s;
}

// The header's declarations and metadata of one variant.
std::string headerPart(const CompiledVariant &v, const std::string &base) {
  const std::string &n = v.variant.name;
  const Specialization &s = v.variant.spec;
  std::ostringstream o;
  o << "/* " << n << ": " << v.entry << " for " << s.arch << ", signature " << joinTypes(v)
    << ", constexprs " << joinConstexprs(v);
  if (!v.variant.when.empty())
    o << ", for " << joinConditions(v);
  o << " */\n";
  auto define = [&](const std::string &key, const std::string &value) {
    o << "#define " << n << "_" << key << " " << value << "\n";
  };
  define("ARCH", "\"" + s.arch + "\"");
  define("THREADS", std::to_string(v.threads));
  define("NUM_WARPS", std::to_string(s.numWarps));
  define("PROGRAMS_PER_CTA", std::to_string(s.programsPerCTA));
  define("CLUSTER_SIZE", std::to_string(s.clusterSize));
  define("DYNAMIC_SHARED_BYTES", std::to_string(v.sharedBytes));
  define("WAITS_ON_PRIOR_KERNEL", v.waitsOnPriorKernel ? "1" : "0");
  define("SYNCS_GRID", v.syncsGrid ? "1" : "0");
  define("STATIC_SHARED_BYTES", std::to_string(v.ptxas.staticSharedBytes));
  define("REGISTERS", std::to_string(v.ptxas.registers));
  define("SPILL_STORE_BYTES", std::to_string(v.ptxas.spillStoreBytes));
  define("GRID_RULE", std::string("\"") + gridRuleName(v.variant.grid) + "\"");
  define("SPECIALIZATION", "\"" + v.specialization + "\"");
  define("KERNEL_HASH", "\"" + v.kernelHash + "\"");
  o << "/* Launches `programs` programs on the grid the grid rule gives. Returns CUDA_SUCCESS or the\n"
       " * error (CUDA_ERROR_INVALID_VALUE when an argument does not fit the specialization);\n"
       " * "
    << base << "_last_error() then says why. */\n"
    << "CUresult " << n << "(CUstream stream, int64_t programs" << declaredParams(v) << ");\n"
    << "/* The same on an explicit grid of CTAs (each of programs_per_cta programs). */\n"
    << "CUresult " << n << "_grid(CUstream stream, uint32_t grid_x, uint32_t grid_y, "
    << "uint32_t grid_z" << declaredParams(v) << ");\n\n";
  return o.str();
}

// The checks of the arguments against the variant's marks and conditions; parameters without
// one are named void, so that the file compiles without warnings under -Wall -Wextra.
std::string fitsChecks(const CompiledVariant &v) {
  std::ostringstream o;
  bool anyCheck = false;
  for (const LauncherParam &p : v.params) {
    bool checked = p.divisibility > 1;
    for (const Condition &c : v.variant.when)
      checked |= c.arg == p.name;
    if (!checked)
      o << "  (void)" << p.name << ";\n";
    anyCheck |= checked;
  }
  if (!anyCheck)
    o << "  (void)why;\n";
  for (size_t i = 0; i < v.params.size(); ++i) {
    const LauncherParam &p = v.params[i];
    std::string arg = "argument " + std::to_string(i) + " ('" + p.name + "')";
    if (p.divisibility > 1 && p.pointer)
      o << "  if (" << p.name << " % 16 != 0) {\n"
        << "    if (why)\n"
        << "      *why = \"" << arg << " was specialized as 16-byte aligned (" << p.type
        << ") but is \" + tritium_aot::hex(" << p.name << ");\n"
        << "    return false;\n  }\n";
    else if (p.divisibility > 1)
      o << "  if (" << p.name << " % 16 != 0) {\n"
        << "    if (why)\n"
        << "      *why = \"" << arg << " was specialized as divisible by 16 (" << p.type
        << ") but is \" + std::to_string(" << p.name << ");\n"
        << "    return false;\n  }\n";
    for (const Condition &c : v.variant.when)
      if (c.arg == p.name)
        o << "  if (!(" << p.name << " " << c.op << " " << c.value << "LL)) {\n"
          << "    if (why)\n"
          << "      *why = \"" << arg << " is \" + std::to_string(" << p.name
          << ") + \" but the variant needs " << c.str() << "\";\n"
          << "    return false;\n  }\n";
  }
  return o.str();
}

// The source's part for one variant: its code, image, slot, checks and launchers.
std::string sourcePart(const CompiledVariant &v, const std::string &base) {
  const std::string &n = v.variant.name;
  const Specialization &s = v.variant.spec;
  std::ostringstream o;
  o << "// ---- " << n << " " << std::string(std::max<int>(3, 92 - int(n.size())), '-') << "\n\n"
    << "namespace {\n\n"
    << "// The cubin ptxas made for " << s.arch << ".\n"
    << "alignas(64) const unsigned char " << n << "_cubin[" << v.ptxas.cubin.size() << "] = {\n"
    << byteArrayBody(v.ptxas.cubin) << "};\n\n"
    << "// The PTX, for GPUs newer than " << s.arch << " (the driver compiles it on first use).\n"
    << "const char " << n << "_ptx[] =\n"
    << stringLiteralLines(v.ptx, "    ") << "    ;\n\n"
    << "const tritium_aot::Image " << n << "_image = {\"" << n << "\", \"" << v.entry << "\", \""
    << s.arch << "\", " << n << "_cubin, " << n << "_ptx, " << v.threads << ", " << v.sharedBytes
    << ", " << s.clusterSize << ", " << s.programsPerCTA << ", " << s.numWarps << ", "
    << (v.variant.grid == GridRule::Persistent ? "true" : "false") << ", "
    << (v.waitsOnPriorKernel ? "true" : "false") << ", " << (v.syncsGrid ? "true" : "false")
    << "};\n"
    << "tritium_aot::Slot " << n << "_slot;\n\n"
    << "// Whether the arguments fit the specialization; when not, *why names the first that does\n"
    << "// not.\n"
    << "bool " << n << "_fits(std::string *why" << declaredParams(v) << ") {\n"
    << fitsChecks(v) << "  return true;\n}\n\n"
    << tensorMapsFunction(v)
    << "CUresult " << n << "_launch_programs(CUstream stream, int64_t programs" << declaredParams(v)
    << ") {\n"
    << paramPointers(v) << "  return tritium_aot::launchPrograms(" << n << "_image, " << n
    << "_slot, stream, programs, params);\n}\n\n"
    << "CUresult " << n << "_launch_grid(CUstream stream, uint32_t grid_x, uint32_t grid_y, "
    << "uint32_t grid_z" << declaredParams(v) << ") {\n"
    << paramPointers(v) << "  return tritium_aot::launch(" << n << "_image, " << n
    << "_slot, nullptr, stream, grid_x, grid_y, grid_z, params);\n}\n\n"
    << "} // namespace\n\n";
  for (bool grid : {false, true}) {
    o << "extern \"C\" CUresult " << n << (grid ? "_grid(CUstream stream, uint32_t grid_x, "
                                                  "uint32_t grid_y, uint32_t grid_z"
                                                : "(CUstream stream, int64_t programs")
      << declaredParams(v) << ") {\n"
      << "  std::string why;\n"
      << "  if (!" << n << "_fits(&why" << passedArgs(v) << "))\n"
      << "    return tritium_aot::fail(CUDA_ERROR_INVALID_VALUE, \"" << n << ": \" + why);\n"
      << "  return " << n << (grid ? "_launch_grid(stream, grid_x, grid_y, grid_z"
                                   : "_launch_programs(stream, programs")
      << passedArgs(v) << ");\n}\n\n";
  }
  (void)base;
  return o.str();
}

bool needsDtype(const std::vector<CompiledVariant> &variants) {
  for (const CompiledVariant &v : variants)
    if (v.dtype != variants[0].dtype)
      return true;
  return false;
}

std::string dispatcherDeclaration(const std::vector<CompiledVariant> &variants,
                                  const std::string &base, bool grid) {
  std::string dtype = needsDtype(variants) ? ", const char *dtype" : "";
  return "CUresult " + base +
         (grid ? "_grid(CUstream stream, uint32_t grid_x, uint32_t grid_y, uint32_t grid_z"
               : "(CUstream stream, int64_t programs") +
         dtype + declaredParams(variants[0]) + ")";
}

std::string dispatcherHeader(const std::vector<CompiledVariant> &variants,
                             const std::string &base) {
  std::ostringstream o;
  o << "/* " << base << ": launches the first variant that fits the arguments";
  if (needsDtype(variants))
    o << " and whose pointers' element types are `dtype`";
  o << ", in this order:\n";
  for (const CompiledVariant &v : variants) {
    o << " *   " << v.variant.name << " (" << (needsDtype(variants) ? "dtype " + v.dtype + ", " : "")
      << "signature " << joinTypes(v);
    if (!v.variant.when.empty())
      o << ", " << joinConditions(v);
    o << ")\n";
  }
  o << " * None fits: CUDA_ERROR_INVALID_VALUE, and " << base
    << "_last_error() says why each one did not. */\n"
    << dispatcherDeclaration(variants, base, false) << ";\n"
    << dispatcherDeclaration(variants, base, true) << ";\n\n";
  return o.str();
}

std::string dispatcherSource(const std::vector<CompiledVariant> &variants,
                             const std::string &base) {
  bool dtype = needsDtype(variants);
  const CompiledVariant &first = variants[0];
  std::ostringstream o;
  o << "// ---- " << base << ": the dispatcher " << std::string(std::max<int>(3, 77 - int(base.size())), '-')
    << "\n\nnamespace {\n\n"
    << "// Why no variant fits: each one's first failing check.\n"
    << "std::string " << base << "_no_fit(" << (dtype ? "const char *dtype" : "int")
    << declaredParams(first) << ") {\n"
    << "  std::string why, all = \"" << base << ": no variant fits the arguments:\";\n";
  for (const CompiledVariant &v : variants) {
    if (dtype)
      o << "  if (!dtype || std::strcmp(dtype, \"" << v.dtype << "\") != 0)\n"
        << "    all += std::string(\"\\n  " << v.variant.name << ": dtype is '\") + (dtype ? dtype : \"(null)\") + \"', not '"
        << v.dtype << "'\";\n  else ";
    else
      o << "  ";
    o << "if (!" << v.variant.name << "_fits(&why" << passedArgs(v) << "))\n"
      << "    all += \"\\n  " << v.variant.name << ": \" + why;\n";
  }
  o << "  return all;\n}\n\n} // namespace\n\n";
  for (bool grid : {false, true}) {
    o << "extern \"C\" " << dispatcherDeclaration(variants, base, grid) << " {\n";
    for (const CompiledVariant &v : variants) {
      o << "  if (";
      if (dtype)
        o << "dtype && std::strcmp(dtype, \"" << v.dtype << "\") == 0 && ";
      o << v.variant.name << "_fits(nullptr" << passedArgs(v) << "))\n"
        << "    return " << v.variant.name
        << (grid ? "_launch_grid(stream, grid_x, grid_y, grid_z" : "_launch_programs(stream, programs")
        << passedArgs(v) << ");\n";
    }
    o << "  return tritium_aot::fail(CUDA_ERROR_INVALID_VALUE, " << base << "_no_fit("
      << (dtype ? "dtype" : "0") << passedArgs(first) << "));\n}\n\n";
  }
  return o.str();
}

} // namespace

GeneratedFiles emitFiles(const std::vector<CompiledVariant> &variants, const Options &options,
                         const std::string &ptxasVersion) {
  const std::string &base = options.name;
  bool dispatcher = variants.size() > 1 || variants[0].variant.name != base;
  GeneratedFiles f;
  f.headerName = base + ".h";
  f.sourceName = base + ".cpp";
  std::string guard = upper(base) + "_TRITIUM_AOT_H";

  std::ostringstream h;
  h << fileHeaderComment(f.headerName, options, ptxasVersion)
    << "// " << f.sourceName
    << " holds the kernels and these functions' bodies: compile it into your program\n"
       "// (C++17) and link the CUDA driver (-lcuda). Launches use the calling thread's current\n"
       "// CUDA context and load the kernel into it on first use. tritium's docs/AOT.md describes\n"
       "// these files.\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include <cuda.h>\n#include <stdint.h>\n\n"
    << "/* " << f.sourceName << " refuses to compile against a header from another run. */\n"
    << "#define " << base << "_AOT_STAMP " << kStampPlaceholder << "\n"
    << "#define " << base << "_TRITIUM_VERSION \"" TRITIUM_VERSION "\"\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const CompiledVariant &v : variants)
    h << headerPart(v, base);
  if (dispatcher)
    h << dispatcherHeader(variants, base);
  h << "/* The message of the last call of this file's functions that failed on this thread. */\n"
    << "const char *" << base << "_last_error(void);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";

  std::ostringstream s;
  s << fileHeaderComment(f.sourceName, options, ptxasVersion)
    << "// The launchers and the code they launch are in this one file, so they cannot disagree;\n"
    << "// " << f.headerName << " is checked against it by " << base << "_AOT_STAMP below.\n//\n";
  for (const CompiledVariant &v : variants)
    s << provenance(v, "// ") << "//\n";
  s << "// Hashes are tritium's cache-key hash: SHA-256 over length-prefixed (name, bytes) parts.\n"
    << "#include \"" << f.headerName << "\"\n\n"
    << "#include <algorithm>\n#include <cstdint>\n#include <cstdio>\n#include <cstring>\n"
    << "#include <memory>\n#include <mutex>\n#include <string>\n#include <vector>\n\n"
    << "#if !defined(" << base << "_AOT_STAMP) || " << base << "_AOT_STAMP != "
    << kStampPlaceholder << "\n"
    << "#error \"" << f.headerName << " comes from another tritium AOT run than " << f.sourceName
    << ": generate both again\"\n#endif\n\n"
    << "namespace {\nnamespace tritium_aot {\n\n"
    << launcherRuntimeText() << "} // namespace tritium_aot\n} // namespace\n\n";
  for (const CompiledVariant &v : variants)
    s << sourcePart(v, base);
  if (dispatcher)
    s << dispatcherSource(variants, base);
  s << "extern \"C\" const char *" << base
    << "_last_error(void) { return tritium_aot::lastError.c_str(); }\n";

  f.header = h.str();
  f.source = s.str();
  // The stamp: a hash of both texts as they are without it.
  std::string stamp = "0x" + rt::cacheKey({{"header", f.header}, {"source", f.source}}).substr(0, 16) +
                      "ULL";
  for (std::string *text : {&f.header, &f.source})
    for (size_t at; (at = text->find(kStampPlaceholder)) != std::string::npos;)
      text->replace(at, kStampPlaceholder.size(), stamp);
  return f;
}

} // namespace tritium::aot
