#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit {

// Reads a whole (small) file; sysfs and procfs files are fine. The error names the path and errno text.
Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes = 16 << 20);

// Durable replace: write a temp file beside it, fsync, rename over, fsync the directory.
// Used for every piece of state that must survive a crash or restart.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view data, int mode = 0644);

}  // namespace fsaudit
