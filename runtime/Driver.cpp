// Loads libcuda.so.1 with dlopen, resolves the versioned entry points cuda.h names, and turns
// CUresult codes into DriverError exceptions with the driver's own names and descriptions.
#include "runtime/Driver.h"

#include "compiler/support/Log.h"

#include <dlfcn.h>

#include <cstring>
#include <memory>

#define TRITIUM_STR(x) #x
#define TRITIUM_XSTR(x) TRITIUM_STR(x) // stringify after macro expansion: "cuMemAlloc_v2"

namespace tritium::rt {

namespace {

// The outcome of the one attempt to load the driver: the table, or why there is none.
struct LoadResult {
  Driver *driver = nullptr; // never freed: kernels and buffers may be released at exit
  std::string error;
};

std::string resultText(const Driver &d, CUresult r) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (!d.cuGetErrorName || d.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (!d.cuGetErrorString || d.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  std::string out = name ? name : "CUresult " + std::to_string(static_cast<int>(r));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

} // namespace

static LoadResult loadDriver() {
  LoadResult res;
  // RTLD_LOCAL keeps libcuda's symbols out of the global namespace; never dlclose'd.
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    res.error = std::string("libcuda.so.1 could not be opened (") + (why ? why : "unknown reason") +
                "): no NVIDIA driver on this machine";
    return res;
  }

  auto table = std::make_unique<Driver>();
  std::string missing;
#define TRITIUM_DRIVER_LOAD(fn)                                                                    \
  table->fn = reinterpret_cast<decltype(table->fn)>(dlsym(handle, TRITIUM_XSTR(fn)));              \
  if (!table->fn)                                                                                  \
    missing += std::string(missing.empty() ? "" : ", ") + #fn + " (symbol " TRITIUM_XSTR(fn) ")";
  TRITIUM_DRIVER_FUNCTIONS(TRITIUM_DRIVER_LOAD)
#undef TRITIUM_DRIVER_LOAD
  if (!missing.empty()) {
    res.error = "libcuda.so.1 lacks " + missing +
                ": the NVIDIA driver is too old for tritium (CUDA 13 needs driver >= 580)";
    return res;
  }

  CUresult r = table->cuInit(0);
  if (r != CUDA_SUCCESS) {
    res.error = "cuInit failed: " + resultText(*table, r);
    return res;
  }
  r = table->cuDriverGetVersion(&table->version);
  if (r != CUDA_SUCCESS) {
    res.error = "cuDriverGetVersion failed: " + resultText(*table, r);
    return res;
  }
  tritium::log().debug("CUDA driver loaded, version {}.{}", table->version / 1000,
                       (table->version % 1000) / 10);
  res.driver = table.release();
  return res;
}

Driver &Driver::get() {
  static const LoadResult loaded = loadDriver(); // thread-safe, runs once
  if (!loaded.driver)
    throw DriverError(loaded.error);
  return *loaded.driver;
}

bool Driver::available(std::string *whyNot) {
  static const std::string reason = []() -> std::string {
    try {
      Driver &d = get();
      int count = 0;
      CUresult r = d.cuDeviceGetCount(&count);
      if (r != CUDA_SUCCESS)
        return "cuDeviceGetCount failed: " + resultText(d, r);
      if (count <= 0)
        return "the CUDA driver reports no devices";
      return "";
    } catch (const std::exception &e) {
      return e.what();
    } catch (...) {
      return "unknown error while loading the CUDA driver";
    }
  }();
  if (whyNot)
    *whyNot = reason;
  return reason.empty();
}

std::string describe(CUresult r) {
  try {
    return resultText(Driver::get(), r);
  } catch (const DriverError &) {
    return "CUresult " + std::to_string(static_cast<int>(r));
  }
}

void check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return;
  std::string name = call ? call : "CUDA driver call";
  if (auto paren = name.find('('); paren != std::string::npos)
    name.resize(paren);
  while (!name.empty() && name.back() == ' ')
    name.pop_back();
  throw DriverError(name + " failed: " + describe(r), r);
}

} // namespace tritium::rt
