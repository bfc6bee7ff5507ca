#pragma once
// Mount state of every target: read-only (the kernel's errors=remount-ro shows in the superblock
// options), device, fstype, options, and whether the filesystem checksums data at all.
#include <memory>

#include "daemon/probe/probe.hpp"
#include "daemon/probe/targets.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::mount {

// 1 where the filesystem verifies data checksums on read (btrfs without nodatasum/nodatacow, ZFS,
// bcachefs without data_checksum=none); 0 for XFS, ext4 and anything else: their data can rot unseen.
bool has_data_checksums(const std::string& fstype, const std::string& mount_options,
                        const std::string& super_options);

// Pure: the metrics for target `t` given its entry in the mount table (nullptr: not mounted, no samples;
// the probe reports that as a failure with its reason).
metrics::Batch mount_metrics(const Target& t, const MountEntry* entry);

std::unique_ptr<Probe> make_mount_probe(const config::Config& cfg);

}  // namespace fsaudit::mount
