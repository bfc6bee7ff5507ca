#pragma once
// Which filesystem a mount table's fstype names: the one answer that discovery, the probes, the
// setup audit and the canary code read. zfs-fuse mounts its datasets as "fuse.zfs" (older
// packagings "fuse.zfs-fuse"); they are ZFS to everyone, and storage, although other FUSE
// filesystems are not.
#include <string_view>

namespace fsaudit::fstype {

// "zfs" for OpenZFS and zfs-fuse, else the fstype as the mount table gives it.
std::string_view canonical(std::string_view fstype);
bool is_zfs(std::string_view fstype);
// proc, sysfs, cgroup, tmpfs, overlay, ... anything with no storage device behind it to audit.
bool is_pseudo(std::string_view fstype);
// Local filesystems fsaudit watches by default (ZFS through zfs-fuse included).
bool is_storage(std::string_view fstype);
// FUSE (other than zfs-fuse) and network filesystems: watched only when targets.fstypes names them.
bool is_fuse_or_network(std::string_view fstype);

}  // namespace fsaudit::fstype
