#include "daemon/app/registry.hpp"

// Each probe folder adds its include and its factory call at its own marker line below.
#include "probes/capacity/capacity.hpp"
#include "probes/mount/mount.hpp"
// @include-capacity
#include "probes/zfs/probe.hpp"  // @include-zfs
// @include-btrfs
// @include-fshealth
// @include-kernel_log
// @include-canary
// @include-latency
#include "probes/latency/latency_probe.hpp"
// @include-scrub

namespace fsaudit::app {

std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(probes::make_capacity_probe(cfg));
  probes.push_back(probes::make_mount_probe(cfg));
  // @make-capacity
  probes.push_back(zfs::make_zfs_probe(cfg));  // @make-zfs
  // @make-btrfs
  // @make-fshealth
  // @make-kernel_log
  // @make-canary
  // @make-latency
  for (auto& p : latency::make_latency_probes(cfg)) probes.push_back(std::move(p));
  // @make-scrub
  return probes;
}

}  // namespace fsaudit::app
