#pragma once
// A pool member as zpool names it -> the block device under it, on this host's view of /dev and /sys.
// zpool prints a member by how the pool was imported: a kernel name ("sdb1"), a full path with -P or
// for file vdevs, or the bare name of a /dev/disk/by-* link ("ata-ST4000DM004_ZFN0ABCD-part1",
// "wwn-0x5000c500b1234567-part1", a vdev_id.conf alias) -- the last is how most pools are built.
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

// The device path (or kernel name) whole_disks() can walk; "" for what is no block device here: a
// file vdev, an interior vdev ("mirror-0"), a GUID of a member that is gone.
std::string member_device(const HostPaths& host, std::string_view name);

// The leaf members of the pools in a report (data, log, special, cache and spares), by zpool's names.
std::vector<std::string> leaf_members(const ZfsStatusReport& report);

}  // namespace fsaudit::zfs
