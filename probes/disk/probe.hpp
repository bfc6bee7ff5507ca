#pragma once
// Which physical disks sit under the watched filesystems, and who they are (model, serial, WWN,
// by-id link, bus): fsaudit_disk_info once per disk however many filesystems share it, and
// fsaudit_target_disk_info joining each target to its disks.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/disk_identity.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/disk/smart.hpp"

namespace fsaudit::disk {

// Pool -> its leaf members as zpool names them (zfs::leaf_members of `zpool status`).
using PoolMembers = std::map<std::string, std::vector<std::string>>;

// The ZFS pool a dataset target belongs to ("" when the target is no ZFS dataset).
std::string pool_of(const Target& t);

// The member block devices of a target, as kernel names or /dev paths: its mount source when that
// is a device, every device of a btrfs filesystem, every member of a ZFS dataset's pool that is a
// block device (from `pools`). Empty for pseudo filesystems and file vdevs.
std::vector<std::string> target_members(const HostPaths& host, const Target& t, const PoolMembers& pools = {},
                                        btrfs::SysfsMemo* memo = nullptr);

// Whole disk -> the targets on it.
using DiskTargets = std::map<std::string, std::set<std::string>>;
DiskTargets disks_of_targets(const HostPaths& host, const std::vector<Target>& targets, const PoolMembers& pools = {},
                             btrfs::SysfsMemo* memo = nullptr);

// Pure: the series for these disks (identities in `ids`, keyed by kernel name).
metrics::Batch disk_metrics(const DiskTargets& disks, const std::map<std::string, block::DiskIdentity>& ids);

// Pure: the health series of one disk from its smartctl report.
void smart_metrics(metrics::Batch& b, const std::string& disk, const SmartReport& r);

std::unique_ptr<Probe> make_disk_probe(const config::Config& cfg);

// SMART health of every disk under a watched filesystem: smartctl through fsaudit-helper's
// smart-read verb (or directly when fsauditd runs as root), smart.concurrency disks at a time, each
// call bounded by smart.call_timeout and the run's deadline. A disk without SMART is asked once per process.
std::unique_ptr<Probe> make_smart_probe(const config::Config& cfg);

}  // namespace fsaudit::disk
