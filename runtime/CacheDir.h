// Where the disk cache lives, without the cache itself (runtime/Cache.h): for code beside the
// cache that must not see LLVM's headers, such as the kernel library's autotuner.
#pragma once

#include <filesystem>

namespace tritium::rt {

// The cache root: $TRITIUM_CACHE_DIR if set (and non-empty), else $HOME/.cache/tritium, else
// /tmp/tritium-cache when HOME is unset.
std::filesystem::path defaultCacheDir();

} // namespace tritium::rt
