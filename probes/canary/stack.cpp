#include "probes/canary/stack.hpp"

#include "daemon/core/fstype.hpp"
#include "probes/btrfs/canary_ops.hpp"
#include "probes/ext4/canary_ops.hpp"
#include "probes/xfs/canary_ops.hpp"
#include "probes/zfs/canary_ops.hpp"

namespace fsaudit::canary {

OpsTarget ops_target(const config::CanaryTarget& t) {
  return OpsTarget{t.name, std::string(fstype::canonical(t.fs)), t.mountpoint, t.pool, t.devices, t.mount_options};
}

Result<std::unique_ptr<CanaryOps>> make_canary_ops(const config::CanaryTarget& t, StackEnv env, const HostPaths& host) {
  env.host = host;
  auto target = ops_target(t);
  const auto& fs = target.fs;
  std::unique_ptr<CanaryOps> ops;
  if (fs == "btrfs") ops = std::make_unique<btrfs::CanaryOps>(std::move(target), env);
  else if (fs == "zfs") ops = std::make_unique<zfs::CanaryOps>(std::move(target), env);
  else if (fs == "xfs") ops = std::make_unique<PlainOps>(std::move(target), env, xfs::lab_recipe());
  else if (fs == "ext4") ops = std::make_unique<PlainOps>(std::move(target), env, ext4::lab_recipe());
  else
    return err("canary " + t.name + ": fs \"" + t.fs + "\" has no canary operations (btrfs, zfs, xfs or ext4)");
  return ops;
}

bool expectation_met(const std::string& expect, const std::string& verdict) {
  if (expect == "repaired") return verdict == "repaired";
  if (expect == "detected") return verdict == "detected" || verdict == "repaired";
  // A known-blind stack: any completed injection meets it (silent is the standing warning).
  return verdict == "silent" || verdict == "detected" || verdict == "repaired" || verdict == "unverified";
}

}  // namespace fsaudit::canary
