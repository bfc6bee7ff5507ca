#pragma once
// ext4 error state from <sysfs>/fs/ext4/<dev>/: errors_count (kept in the superblock until e2fsck
// clears it), first/last error time, function, line, inode, block and errno, warning_count.
// ext4 has no data checksums: errors here are metadata errors the kernel itself detected.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "daemon/core/files.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/ext4/parse.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::ext4 {

// Reads the files parse_ext4_sysfs() uses from `dir`. An absent file is left out of the map (the
// parser decides what may be missing); a file that is there but unreadable is an error naming the
// file and errno.
Result<std::map<std::string, std::string>> read_ext4_sysfs_files(const std::filesystem::path& dir,
                                                                 const AttributeReader& read = sysfs_reader());

// Shut down or not from /proc/fs/ext4/<dev>/options: nullopt when the file is absent (no procfs
// entry on this kernel), an error when it is unreadable or malformed.
Result<std::optional<bool>> read_ext4_shutdown(const std::filesystem::path& options_file, const AttributeReader& read);

// fsaudit_ext4_warnings only with `warning_series` (ext4.detail: full).
metrics::Batch ext4_metrics(const Target& t, const std::string& device, const ErrorState& s, bool warning_series = false);

std::unique_ptr<Probe> make_ext4_probe(const config::Config& cfg);

}  // namespace fsaudit::ext4
