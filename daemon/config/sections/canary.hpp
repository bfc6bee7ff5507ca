#pragma once
// Config section 'canary': injected-corruption canaries and lab mode.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config/reader.hpp"
#include "daemon/core/window.hpp"

namespace fsaudit::config {

// One dedicated canary filesystem (or ZFS pool) that fsaudit may corrupt on purpose.
struct CanaryTarget {
  std::string name;                  // label `target`; also the state directory name
  std::string fs;                    // btrfs | zfs | xfs | ext4
  std::string layout;                // raid1, single, dup, mirror, raidz1, md-raid1, plain, ...
  std::vector<std::string> devices;  // member block devices (or files for ZFS file vdevs)
  std::string mountpoint;            // where the canary is mounted (ZFS: the pool's root dataset)
  std::string pool;                  // ZFS only
  std::string expect;                // "" = derived from fs+layout; else repaired | detected | blind
  std::chrono::milliseconds interval{std::chrono::hours(24)};
  CalendarWindow window;             // default "*" (always)
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  std::uint64_t file_blocks = 64;    // canary file size in filesystem blocks
  std::uint64_t corrupt_bytes = 16;  // bytes overwritten in one copy
  std::string mount_options;         // used when the cycle remounts the canary ("" = defaults)
};

struct CanaryLabConfig {
  bool enabled = false;
  std::string dir;                    // "" = <state_dir>/lab
  std::uint64_t image_size = 128ull << 20;      // per device for btrfs/ext4 (ZFS vdevs: 64 MiB, zfs-fuse's minimum)
  std::uint64_t xfs_image_size = 320ull << 20;  // XFS needs >= 300 MiB
  std::vector<std::string> stacks = {"btrfs-raid1", "btrfs-single", "xfs", "ext4", "zfs-mirror"};
  std::chrono::milliseconds interval{std::chrono::minutes(10)};
};

struct CanaryConfig {
  std::vector<CanaryTarget> canaries;
  CanaryLabConfig lab;
  std::string helper;  // unix socket of fsaudit-helper: cycles run there, not in fsauditd ("" = in-process)
  const CanaryTarget* find(const std::string& name) const {
    for (const auto& c : canaries)
      if (c.name == name) return &c;
    return nullptr;
  }
};

// A stack lab mode (and the lab tests, scripts/run-lab.sh) can build: `fs` picks the recipe in
// probes/canary/lab.cpp, the rest is the shape that recipe gives it. The one list of lab stacks.
struct LabStack {
  std::string name;     // the stack; its canary is lab-<name>
  std::string fs;       // btrfs | zfs | xfs | ext4
  std::string profile;  // btrfs: the data and metadata profile; zfs: the vdev type ("" = a plain vdev)
  int members = 1;      // loop devices (btrfs, XFS, ext4) or file vdevs (ZFS)
  int copies = 1;       // ZFS: the pool's copies property (`zfs set copies=N`)
  std::string layout;   // the layout word lab mode's canary is configured with
};

const std::vector<std::string>& canary_fs_choices();
const std::vector<LabStack>& canary_lab_stacks();
const LabStack* find_lab_stack(const std::string& name);

// `s` is the 'canary' mapping (empty when absent). Reads every key it knows, then s.finish().
CanaryConfig parse_canary(Section s);

}  // namespace fsaudit::config
