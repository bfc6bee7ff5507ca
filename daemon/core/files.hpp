#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit {

// Reads a whole (small) file; sysfs and procfs files are fine. The error names the path and errno text.
Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes = 16 << 20);
// A sysfs text attribute (one value, which the kernel prints whole into the first read): a read that
// returns less than it asked for is the end, so open, read, close (read_file's extra read to see the
// end was a quarter of the system calls of the per-filesystem probes). Not for procfs or binary
// attributes, which may come in pieces.
Result<std::string> read_sysfs_attribute(const std::filesystem::path& path, std::size_t max_bytes = 64 << 10);

// Durable replace: write a temp file beside it, fsync, rename over, fsync the directory.
// Used for every piece of state that must survive a crash or restart.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view data, int mode = 0644);

}  // namespace fsaudit
