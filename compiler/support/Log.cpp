// Logger set-up: one stderr logger whose level the environment chooses.
#include "compiler/support/Log.h"

#include <cstdlib>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace tritium {

spdlog::logger &log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("tritium");
    l->set_pattern("[tritium %^%l%$] %v");
    const char *level = std::getenv("TRITIUM_LOG_LEVEL");
    l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
    return l;
  }();
  return *logger;
}

} // namespace tritium
