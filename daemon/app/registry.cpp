#include "daemon/app/registry.hpp"

// Each probe folder adds its include and its factory call at its own marker line below.
#include "probes/capacity/capacity.hpp"
#include "probes/mount/mount.hpp"
// @include-capacity
#include "probes/zfs/probe.hpp"  // @include-zfs
#include "probes/btrfs/btrfs.hpp"  // @include-btrfs
#include "probes/ext4/fshealth_probes.hpp"  // @include-fshealth
#include "probes/kernel_log/kernel_log_probe.hpp"  // @include-kernel_log
#include "probes/canary/probe.hpp"  // @include-canary
// @include-latency
#include "probes/latency/latency_probe.hpp"
#include "probes/scrub/probe.hpp"  // @include-scrub

namespace fsaudit::app {

std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(probes::make_capacity_probe(cfg));
  probes.push_back(probes::make_mount_probe(cfg));
  // @make-capacity
  probes.push_back(zfs::make_zfs_probe(cfg));  // @make-zfs
  probes.push_back(probes::make_btrfs_probe(cfg));  // @make-btrfs
  for (auto make : {probes::make_bcachefs_probe, probes::make_xfs_probe, probes::make_ext4_probe, probes::make_md_probe}) probes.push_back(make(cfg));  // @make-fshealth
  probes.push_back(kernel_log::make_kernel_log_probe(cfg));  // @make-kernel_log
  for (auto& p : canary::make_canary_probes(cfg)) probes.push_back(std::move(p));  // @make-canary
  // @make-latency
  for (auto& p : latency::make_latency_probes(cfg)) probes.push_back(std::move(p));
  probes.push_back(scrub::make_scrub_probe(cfg));  // @make-scrub
  return probes;
}

}  // namespace fsaudit::app
