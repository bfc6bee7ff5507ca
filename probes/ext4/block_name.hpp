#pragma once
// The kernel name of a filesystem's block device ("vda", "loop1", "dm-0"), which names its
// directory in /sys/fs/ext4 and /sys/fs/xfs (the superblock's s_id). Shared by the ext4 and XFS
// probes (fsaudit_probe_ext4).
#include <string>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "daemon/probe/probe.hpp"

namespace fsaudit::ext4 {

// Candidates in order: <sysfs>/dev/block/<major>:<minor> resolved, the mount source resolved under
// devfs (/dev/mapper/x -> dm-0), the source's last path component. Deduplicated, never empty
// strings.
std::vector<std::string> block_name_candidates(const HostPaths& host, const Target& t);

// The first candidate for which <sysfs>/fs/<fs_dir>/<name> is a directory, or "" if none.
std::string sysfs_fs_dir_name(const HostPaths& host, const Target& t, const std::string& fs_dir);

}  // namespace fsaudit::ext4
