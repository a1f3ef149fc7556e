// tritium's logger: spdlog, level from TRITIUM_LOG_LEVEL (trace|debug|info|warn|error|off).
#pragma once

#include <spdlog/spdlog.h>

namespace tritium {

// The shared "tritium" logger, created on first use.
spdlog::logger &log();

} // namespace tritium
