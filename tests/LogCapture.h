// Captures what tritium logs at warning level and above while it lives, for tests that check
// a warning's text.
#pragma once

#include "compiler/support/Log.h"

#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

namespace tritium::testing {

class LogCapture {
public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    sink_->set_pattern("%l: %v");
    sink_->set_level(spdlog::level::warn);
    tritium::log().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto &sinks = tritium::log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture &) = delete;
  LogCapture &operator=(const LogCapture &) = delete;
  std::string text() const { return text_.str(); }

private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

} // namespace tritium::testing
