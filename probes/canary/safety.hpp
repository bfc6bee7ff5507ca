#pragma once
// The safety gate: every check that must pass before fsaudit writes a single byte to a canary
// (and before a cycle even writes its canary file). Any failure is a refusal with its reason.
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/config/sections/canary.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary_ops/ops.hpp"

namespace fsaudit::canary {

// Pure: "" when the mount table is consistent with the canary, else the reason to refuse.
// `online`: the canary is expected mounted at its mount point (fs) / imported (zfs); when false,
// no member may be mounted anywhere. `pool_mount`: the canary's mount is a dataset of its pool
// (CanaryOps::mounted_as_pool), not a mount of a member device.
std::string mount_conflict(const std::vector<MountEntry>& mounts, const std::vector<DeviceIdentity>& members,
                           const config::CanaryTarget& t, bool online, bool pool_mount);

struct Verified {
  const config::CanaryTarget* target = nullptr;
  CanaryRecord record;
  std::vector<DeviceIdentity> members;  // identities now (== recorded)
};

// In config; initialised; every member's identity equals the recorded one; no holders (dm/md);
// mount table consistent; when online also the signature and the stack's own member list.
// `stack`: the canary's operations (make_canary_ops), for what its filesystem decides.
Result<Verified> verify_canary(const config::CanaryConfig& cfg, const std::string& name, const HostPaths& host,
                               const std::filesystem::path& state_dir, CanaryOps& stack, bool online);

// Only for `canary init`: the checks that do not need a record yet. Returns current identities.
Result<std::vector<DeviceIdentity>> verify_for_init(const config::CanaryTarget& t, const HostPaths& host, CanaryOps& stack);

// Whether something is mounted at `mountpoint` now.
Result<bool> mounted_at(const HostPaths& host, const std::string& mountpoint);

}  // namespace fsaudit::canary
