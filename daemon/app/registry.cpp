#include "daemon/app/registry.hpp"

// Each probe folder adds its include and its factory call at its own marker line below.
// @include-capacity
// @include-zfs
// @include-btrfs
// @include-fshealth
// @include-kernel_log
// @include-canary
// @include-latency
// @include-scrub

namespace fsaudit::app {

std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> probes;
  (void)cfg;
  // @make-capacity
  // @make-zfs
  // @make-btrfs
  // @make-fshealth
  // @make-kernel_log
  // @make-canary
  // @make-latency
  // @make-scrub
  return probes;
}

}  // namespace fsaudit::app
