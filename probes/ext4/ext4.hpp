#pragma once
// ext4 error state from <sysfs>/fs/ext4/<dev>/: errors_count (kept in the superblock until e2fsck
// clears it), first/last error time, function, line, inode, block and errno, warning_count.
// ext4 has no data checksums: errors here are metadata errors the kernel itself detected.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "daemon/config/config.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"

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
};

// Pure: file name -> file content of the sysfs directory. errors_count is required.
Result<ErrorState> parse_ext4_sysfs(const std::map<std::string, std::string>& files);
// Reads the files parse_ext4_sysfs() uses from `dir`.
std::map<std::string, std::string> read_ext4_sysfs_files(const std::filesystem::path& dir);

metrics::Batch ext4_metrics(const Target& t, const std::string& device, const ErrorState& s);

// Name of an ext4 error code as stored in the superblock (EXT4_ERR_*: 2 "EIO", 4 "EFSBADCRC",
// 5 "EFSCORRUPTED", ...), or the number as text.
std::string errno_name(std::int64_t code);

}  // namespace fsaudit::ext4

namespace fsaudit::probes {
std::unique_ptr<Probe> make_ext4_probe(const config::Config& cfg);
}  // namespace fsaudit::probes
