#pragma once
// Pure parsers for the ext4 sysfs error files: text in, struct out. No host access here; the
// probe (probes/ext4/probe.hpp) reads the files.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit::ext4 {

struct ErrorRecord {  // first_error_* or last_error_*
  std::int64_t time = 0;  // Unix seconds; 0 = none recorded
  std::string function;   // e.g. "ext4_lookup"
  std::uint64_t line = 0;
  std::uint64_t inode = 0;
  std::uint64_t block = 0;
  std::int64_t errcode = 0;  // ext4's EXT4_ERR_* code (2 EIO, 4 EFSBADCRC = checksum, 5 EFSCORRUPTED), 0 = none
};

struct ErrorState {
  std::uint64_t errors_count = 0;
  std::optional<ErrorRecord> first, last;  // present when the kernel exposes the files
  std::optional<std::uint64_t> warning_count, msg_count;  // since mount
  // /proc/fs/ext4/<dev>/options lists "shutdown" once EXT4_IOC_SHUTDOWN (or a fatal journal
  // abort with errors=...) has shut the filesystem down; nullopt when the kernel has no such file.
  std::optional<bool> shutdown;
};

// Pure: file name -> file content of the sysfs directory. errors_count is required; any other
// numeric file that is present must be a number (junk or an empty read is an error, not 0).
Result<ErrorState> parse_ext4_sysfs(const std::map<std::string, std::string>& files);

// Pure: /proc/fs/ext4/<dev>/options (one mount option per line, as ext4_seq_options_show prints
// them) -> true if the filesystem is shut down. Empty or cut text (no final newline) is an error.
Result<bool> parse_ext4_options_shutdown(std::string_view text);

// Name of an ext4 error code as stored in the superblock (EXT4_ERR_*: 2 "EIO", 4 "EFSBADCRC",
// 5 "EFSCORRUPTED", ...), or the number as text.
std::string errno_name(std::int64_t code);

}  // namespace fsaudit::ext4
