#include "daemon/app/registry.hpp"

// Every probe type the daemon runs: each probe folder exposes a factory, called here.
#include "probes/btrfs/btrfs.hpp"
#include "probes/canary/probe.hpp"
#include "probes/capacity/capacity.hpp"
#include "probes/ext4/fshealth_probes.hpp"
#include "probes/kernel_log/kernel_log_probe.hpp"
#include "probes/latency/latency_probe.hpp"
#include "probes/mount/mount.hpp"
#include "probes/scrub/probe.hpp"
#include "probes/setup/probe.hpp"
#include "probes/zfs/probe.hpp"

namespace fsaudit::app {

std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(probes::make_capacity_probe(cfg));
  probes.push_back(probes::make_mount_probe(cfg));
  probes.push_back(zfs::make_zfs_probe(cfg));
  probes.push_back(probes::make_btrfs_probe(cfg));
  for (auto make : {probes::make_bcachefs_probe, probes::make_xfs_probe, probes::make_ext4_probe, probes::make_md_probe})
    probes.push_back(make(cfg));
  probes.push_back(kernel_log::make_kernel_log_probe(cfg));
  for (auto& p : canary::make_canary_probes(cfg)) probes.push_back(std::move(p));
  for (auto& p : latency::make_latency_probes(cfg)) probes.push_back(std::move(p));
  probes.push_back(scrub::make_scrub_probe(cfg));
  probes.push_back(setup::make_setup_probe(cfg));
  return probes;
}

}  // namespace fsaudit::app
