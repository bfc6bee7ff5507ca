#pragma once
// A configured canary's stack operations (probes/canary_ops/ops.hpp), chosen once, by the canonical
// filesystem type, when the canary is resolved: the cycle, init and the helper's counter clearing
// hold a CanaryOps and never ask which filesystem it is.
#include <memory>
#include <string>

#include "daemon/config/sections/canary.hpp"
#include "daemon/core/result.hpp"
#include "probes/canary_ops/ops.hpp"

namespace fsaudit::canary {

// The part of the canary's config its operations read.
OpsTarget ops_target(const config::CanaryTarget& t);

// btrfs, ZFS (OpenZFS or zfs-fuse: "zfs", "fuse.zfs"), XFS and ext4; any other filesystem is an error
// that names it.
Result<std::unique_ptr<CanaryOps>> make_canary_ops(const config::CanaryTarget& t, StackEnv env, const HostPaths& host);

bool expectation_met(const std::string& expect, const std::string& verdict);

}  // namespace fsaudit::canary
