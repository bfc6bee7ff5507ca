#pragma once
// Device stacks: what the latency sampler measures. Mounts that share their devices share one sampler:
// every dataset of a ZFS pool, every subvolume and bind mount of one btrfs, every mount of one md array
// or block device. Pure apart from reading a few sysfs links under HostPaths.
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/btrfs/probe.hpp"

namespace fsaudit::latency {

// The stack a mount sits on, used as the `stack` label:
//   zfs:<pool>          ZFS and zfs-fuse datasets (pool = first component of the mount source)
//   btrfs:<fsid>        btrfs, all subvolumes (fsid from <sysfs>/fs/btrfs/<fsid>/devices/<dev>)
//   md:<mdN>            a filesystem on an md array (<sysfs>/dev/block/M:m/md exists)
//   block:<name>        any other block device (sda1, nvme0n1p2, dm-3, loop7), from <sysfs>/dev/block/M:m
//   dev:<major>:<minor> when sysfs does not name the device (no block device behind it, e.g. FUSE)
std::string stack_id(const MountEntry& m, const HostPaths& host, btrfs::SysfsMemo* memo = nullptr);

// One sampler's plan: which stack, where its probe file lives, and which watched targets it covers.
// What follows from other fields is not stored (a host with 9,000 stacks kept each path two or three
// times, about 240 bytes per stack): the probe file's directory is always <target>/<dir_name>, the mount
// point is the target's unless an opted-in path lies below it, and a stack that holds only its sampled
// target lists no other.
struct StackPlan {
  std::string id;                    // stack_id()
  std::string fs;                    // fstype of the mount holding the probe file
  std::string target;                // `target` label: that mount point, or the opted-in path
  // Paths as strings, not std::filesystem::path: a path keeps a list of its components besides its
  // text, several hundred bytes per plan on a host with thousands of stacks (issue 33).
  std::string mount;                 // the mount point when it is not `target` (an opted-in path); else ""
  std::vector<std::string> targets;  // the watched targets on this stack (info series), "" when it is {target}
  // Probe file directories on the stack's other watched mounts: a probe file found there is left
  // from an earlier plan or an older fsaudit (one per mount) and is removed by the stack's sampler.
  std::vector<std::string> other_dirs;
  bool sampled = false;              // false: nothing writable or everything opted out (`why`)
  std::string why;
  bool operator==(const StackPlan&) const = default;

  // statvfs here (read-only and fill checks).
  const std::string& mountpoint() const { return mount.empty() ? target : mount; }
  // The probe file's directory: <target>/<dir_name>.
  std::string dir(const std::string& dir_name) const;
  // Every watched target on this stack, `target` itself when it is the only one.
  template <typename F>
  void for_each_target(F&& f) const {
    if (targets.empty() && sampled) f(target);
    for (const auto& t : targets) f(t);
  }
};

struct StackSelection {
  bool discover = true;              // sample the stacks of the watched targets
  std::vector<std::string> opt_in;   // latency.targets: paths whose stack is sampled, probe file there
  std::vector<std::string> exclude;  // latency.exclude: mount point globs never written to
  std::string dir_name = ".fsaudit";
};

// Groups the watched targets (and the opted-in paths) by stack and picks, per stack, the mount that
// holds its probe file: an opted-in path first; otherwise the writable, not excluded mount nearest
// the stack's root (ZFS: the dataset with the fewest path components, the pool's root dataset when
// mounted; btrfs and others: the mount of the filesystem's root, before subvolumes and bind mounts
// of subdirectories), then the shortest mount point. Sorted by id. `mounts` is the whole mount table.
std::vector<StackPlan> plan_stacks(const std::vector<MountEntry>& mounts, const std::vector<Target>& watched,
                                   const StackSelection& sel, const HostPaths& host,
                                   std::vector<std::string>* warnings = nullptr);

}  // namespace fsaudit::latency
