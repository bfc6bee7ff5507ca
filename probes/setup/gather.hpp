#pragma once
// The thin adapter: gathers StackFacts for one target from mountinfo, sysfs (btrfs allocation,
// bcachefs options, block queues, md/dm slaves), `zfs get`/`zpool get`/`zpool status` through the
// command runner, the scrub probe's state files and statvfs. Everything host-side goes through
// HostPaths and the runner, so tests point it at fixture trees and fake tools.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/config/sections/setup.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/setup/facts.hpp"
#include "probes/setup/parse.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::setup {

struct GatherEnv {
  GatherEnv(const HostPaths& h, CommandRunner& r, const ToolPaths& t, const config::SetupConfig& c,
            std::filesystem::path sd, std::vector<MountEntry> m, double n, std::stop_token st = {})
      : host(h), runner(r), tools(t), cfg(c), state_dir(std::move(sd)), mounts(std::move(m)), now(n), stop(st) {}
  const HostPaths& host;
  CommandRunner& runner;
  const ToolPaths& tools;
  const config::SetupConfig& cfg;
  std::filesystem::path state_dir;
  std::vector<MountEntry> mounts;
  double now = 0;
  std::stop_token stop;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // per command
  bool scan_nocow = true;

  // Per run: zpool status of every pool and zpool get per pool, asked once.
  std::optional<Result<zfs::ZfsStatusReport>> zpool_status;
  std::map<std::string, std::optional<PropertyTable>> zpool_props;
  // Per run: the dataset properties of every mounted ZFS dataset, asked in one `zfs get` per 256
  // datasets rather than one per dataset (a process each: 200 datasets cost 0.4 % of a core).
  std::optional<PropertyTable> zfs_props;
  std::optional<std::string> kernel;  // per run: the kernel release, read once, not once per target

  std::string tool(const std::string& n) const {
    auto it = tools.find(n);
    return it == tools.end() || it->second.empty() ? n : it->second;
  }
};

StackFacts gather_facts(const Target& t, GatherEnv& env);

// Block device facts for a kernel name ("sda1", "loop3"): whole disk, queue flags, model, transport,
// loop backing file and the filesystem it lives on.
BlockDevice describe_block(const HostPaths& host, const std::string& name, const std::vector<MountEntry>& mounts);
// The kernel name behind a device path or a ZFS vdev name ("/dev/mapper/x", "ata-XYZ-part1", "sdb").
std::string kernel_name_for(const HostPaths& host, const std::string& path_or_name);
// Walks md/dm slaves below `name`: RAID level, dm-integrity, and the leaf devices.
LowerLayers lower_layers(const HostPaths& host, const std::string& name, std::vector<std::string>* leaves);
std::string kernel_release(const HostPaths& host);

}  // namespace fsaudit::setup
