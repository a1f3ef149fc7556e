// generate() and writeFiles(): the checks that make the generated text compile (names that are
// C identifiers and do not collide, variants that agree on their parameters, conditions on
// integer arguments), then compiling each variant and writing the files.
#include "aot/Aot.h"

#include "aot/CText.h"
#include "aot/CompiledVariant.h"
#include "compiler/support/Error.h"

#include <fstream>
#include <set>
#include <sstream>

namespace tritium::aot {

namespace fs = std::filesystem;

namespace {

// Names the generated functions use for themselves: a kernel parameter may not take them.
const std::set<std::string> &reservedNames() {
  static const std::set<std::string> names = {"stream", "programs", "grid_x", "grid_y", "grid_z",
                                              "dtype",  "why",      "params", "all",
                                              "tritium_aot"};
  return names;
}

void checkName(const std::string &what, const std::string &name) {
  if (!isCIdentifier(name))
    throw UserError(what + " '" + name + "' is not a C identifier (letters, digits and "
                                         "underscores, not starting with a digit)");
}

void checkVariant(const CompiledVariant &c) {
  const std::string &n = c.variant.name;
  for (const LauncherParam &p : c.params)
    if (reservedNames().count(p.name))
      throw UserError("AOT variant '" + n + "': kernel parameter '" + p.name +
                      "' has the name of one of the launcher's own parameters; rename it");
  for (const Condition &cond : c.variant.when) {
    bool found = false;
    for (const LauncherParam &p : c.params)
      if (p.name == cond.arg) {
        if (!p.integer)
          throw UserError("AOT variant '" + n + "': condition '" + cond.str() + "' is on '" +
                          p.name + "', which is " + p.type + ", not an integer");
        found = true;
      }
    if (!found) {
      std::string names;
      for (const LauncherParam &p : c.params)
        if (p.integer)
          names += (names.empty() ? "" : ", ") + p.name;
      throw UserError("AOT variant '" + n + "': condition '" + cond.str() +
                      "' names no runtime argument; the integer arguments are " + names);
    }
  }
}

// A dispatcher passes the same arguments to every variant: same names, same C types.
void checkSameParameters(const CompiledVariant &first, const CompiledVariant &other) {
  auto list = [](const CompiledVariant &v) {
    std::string s;
    for (const LauncherParam &p : v.params)
      s += (s.empty() ? "" : ", ") + p.cType + " " + p.name;
    return s;
  };
  if (list(first) != list(other))
    throw UserError("AOT variants '" + first.variant.name + "' and '" + other.variant.name +
                    "' cannot share a dispatcher: their launchers' parameters differ (" +
                    list(first) + " against " + list(other) +
                    "); pointers may differ in element type, integers must not");
}

} // namespace

GeneratedFiles generate(const std::vector<Variant> &variants, const Options &options) {
  checkName("the AOT file name (Options::name)", options.name);
  if (variants.empty())
    throw UserError("AOT files '" + options.name + "': no variant given");
  std::set<std::string> names;
  for (const Variant &v : variants) {
    checkName("the AOT variant name", v.name);
    if (!names.insert(v.name).second)
      throw UserError("AOT variant name '" + v.name + "' is given twice");
    if (variants.size() > 1 && v.name == options.name)
      throw UserError("AOT variant '" + v.name + "' has the dispatcher's name (Options::name); "
                      "name the variants apart from it");
    for (const char *suffix : {"_grid", "_last_error"})
      if (names.count(options.name + suffix) || v.name == options.name + suffix)
        throw UserError("AOT variant name '" + v.name + "' collides with the function " +
                        options.name + suffix);
  }
  std::string ptxas = options.ptxas.empty() ? findPtxas() : options.ptxas;
  std::vector<CompiledVariant> compiled;
  for (const Variant &v : variants) {
    compiled.push_back(compileVariant(v, ptxas));
    checkVariant(compiled.back());
    if (compiled.size() > 1)
      checkSameParameters(compiled[0], compiled.back());
  }
  return emitFiles(compiled, options, ptxasVersion(ptxas));
}

void writeFiles(const GeneratedFiles &files, const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw UserError("cannot create the folder " + dir.string() + " for AOT files: " + ec.message());
  for (auto [name, text] : {std::pair{&files.headerName, &files.header},
                            std::pair{&files.sourceName, &files.source}}) {
    fs::path path = dir / *name;
    {
      std::ifstream old(path, std::ios::binary);
      std::ostringstream s;
      s << old.rdbuf();
      if (old && s.str() == *text)
        continue; // unchanged: keep its time stamp, so the build does not recompile it
    }
    fs::path tmp = path;
    tmp += ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary);
      f << *text;
      if (!f)
        throw UserError("cannot write " + tmp.string());
    }
    fs::rename(tmp, path, ec);
    if (ec)
      throw UserError("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                      ec.message());
  }
}

} // namespace tritium::aot
