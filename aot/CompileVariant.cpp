// Compiling one AOT variant: the kernel through tritium's pipeline and cache (for its PTX and
// metadata), a second trace without source locations for the kernel's hash, and ptxas for the
// cubin and its register report.
#include "aot/CompiledVariant.h"

#include "compiler/Targets.h"
#include "compiler/support/Error.h"
#include "runtime/Cache.h"

namespace tritium::aot {

namespace {

LauncherParam paramOf(const std::string &name, const std::string &type) {
  LauncherParam p;
  p.name = name;
  p.type = type;
  std::string base = type.substr(0, type.find(':'));
  if (base.size() != type.size() && type.substr(base.size() + 1) == "1")
    throw UserError("argument '" + name + "' (" + type + "): ahead-of-time launchers take ':16' "
                    "marks only, not ':1'");
  p.divisibility = base.size() == type.size() ? 1 : 16;
  p.pointer = !base.empty() && base[0] == '*';
  p.integer = base == "i32" || base == "i64" || base == "u32" || base == "u64";
  p.cType = p.pointer           ? "CUdeviceptr"
            : base == "i32"     ? "int32_t"
            : base == "i64"     ? "int64_t"
            : base == "u32"     ? "uint32_t"
            : base == "u64"     ? "uint64_t"
                                : "float";
  return p;
}

} // namespace

CompiledVariant compileVariant(const Variant &v, const std::string &ptxasPath) {
  auto context = [&](const std::string &what) {
    return "AOT variant '" + v.name + "': " + what;
  };
  if (!v.kernel)
    throw UserError(context("no kernel given"));
  if (std::string bad = checkArch(v.spec.arch); !bad.empty())
    throw UserError(context(bad));
  CompiledVariant c;
  c.variant = v;
  try {
    CompiledKernel &k = v.kernel->compile(v.spec);
    const KernelMetadata &meta = k.metadata();
    c.entry = meta.name;
    for (size_t i = 0; i < meta.signature.types.size(); ++i)
      c.params.push_back(paramOf(meta.signature.names[i], meta.signature.types[i]));
    c.constexprs = meta.constexprs;
    c.sharedBytes = meta.sharedBytes;
    c.threads = k.numThreads();
    c.waitsOnPriorKernel = k.artifacts().waitsOnPriorKernel;
    c.syncsGrid = k.artifacts().syncsGrid;
    c.ptx = k.artifacts().ptx;
    std::optional<std::vector<ir::TensorMapRecipe>> maps =
        ir::parseTensorMaps(k.artifacts().tensorMaps);
    if (!maps)
      throw UserError("its tensor maps' recipes do not parse: " + k.artifacts().tensorMaps);
    c.tensorMaps = *maps;
    c.cacheKey = meta.cacheKey;
    // The kernel's meaning without where its source lives: stable across checkouts.
    Artifacts tir = v.kernel->compileTo(v.spec, Stage::TIR, {.locations = false});
    c.kernelHash = rt::cacheKey({{"ir", tir.tir}});
  } catch (const UserError &e) {
    throw UserError(context(e.what()));
  }
  c.specialization = v.spec.str();
  for (const LauncherParam &p : c.params)
    if (p.pointer) {
      std::string dtype = p.type.substr(1, p.type.find(':') - 1);
      if (("," + c.dtype + ",").find("," + dtype + ",") == std::string::npos)
        c.dtype += (c.dtype.empty() ? "" : ",") + dtype;
    }
  try {
    c.ptxas = assemble(c.ptx, v.spec.arch, c.entry, ptxasPath);
  } catch (const UserError &e) {
    throw UserError(context(e.what()));
  }
  return c;
}

} // namespace tritium::aot
