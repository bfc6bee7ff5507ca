#pragma once
// One way to name a block device as the kernel does ("sdb1", "dm-0", "loop3", "nvme0n1p2"): the
// name in /sys/class/block, in /sys/fs/<fs>/<name>, in btrfs devices/ and in kernel log lines.
// Mount sources, tool output and config give paths instead: /dev/disk/by-id/..., by-partlabel,
// /dev/mapper/<name>, or the bare name. All lookups go through HostPaths, so a fake /dev + /sys
// tree works: symlinks are followed by hand, absolute targets ("/dev/sdb1") are read under
// host.devfs, never under the real /dev.
#include <optional>
#include <string>
#include <string_view>

#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"

namespace fsaudit::block {

// Kernel name for a device path or name:
//  * "sdb1" (no '/')                      -> "sdb1"
//  * "/dev/sdb1"                          -> "sdb1"
//  * "/dev/disk/by-id/x", by-partlabel/y  -> the link's final target ("sdb1")
//  * "/dev/mapper/root" (-> ../dm-0)      -> "dm-0"; a mapper node that is a device file, not a
//    link, is named through its device number (<sysfs>/dev/block/M:m)
// Errors: a dangling link (names the link and its target), a loop of links, a path that does not
// exist, a path outside /dev.
Result<std::string> kernel_name(const HostPaths& host, std::string_view path);

// Like kernel_name(), but returns the input's last path component when it cannot be resolved
// (for labels: better a printed name than none).
std::string kernel_name_or_last(const HostPaths& host, std::string_view path);

// Like kernel_name_or_last(), but a dangling link is named by the device it points to
// (/dev/disk/by-id/x -> ../../sdz1 gives "sdz1"): a member that went away keeps the `device`
// label its series had while it was there.
std::string kernel_name_or_target(const HostPaths& host, std::string_view path);

// Kernel name of the block device with this device number (<sysfs>/dev/block/M:m), if any.
std::optional<std::string> name_of_devnum(const HostPaths& host, unsigned major, unsigned minor);

// The whole disk a partition belongs to ("sda1" -> "sda", "nvme0n1p2" -> "nvme0n1"), or the name
// itself when it is not a partition. From sysfs (<sysfs>/class/block/<name>/partition and its
// parent directory) where present; otherwise from the name (trailing digits, "p" after a digit).
std::string parent_disk(const HostPaths& host, std::string_view name);

}  // namespace fsaudit::block
