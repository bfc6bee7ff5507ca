#pragma once
// The canary probe: one per configured canary, a host-scope deep test. The scheduler should run it
// with schedule() (interval, calendar window, long timeout); the probe also guards itself: when its
// last cycle is younger than the interval, or the window is closed, it only republishes the last
// result (so a default 30 s schedule never turns into a corruption loop).
#include <memory>
#include <optional>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/canary/cycle.hpp"

namespace fsaudit::canary {

struct CanarySchedule {
  std::chrono::milliseconds interval;
  CalendarWindow window;
  std::chrono::milliseconds timeout;
};

class CanaryProbe final : public Probe {
 public:
  CanaryProbe(config::CanaryConfig cfg, std::string canary);
  std::string name() const override { return "canary:" + canary_; }
  Scope scope() const override { return Scope::host; }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;
  CanarySchedule schedule() const;
  // For the daemon's scheduler: the canary's interval, calendar window and long timeout.
  std::optional<ProbeSchedule> own_schedule() const override;
  const std::string& canary() const { return canary_; }

 private:
  config::CanaryConfig cfg_;
  std::string canary_;
};

// The metrics of one canary from its persistent state (and the cycle just run, already recorded).
// What a verdict means, in plain words (the status page and reports).
std::string verdict_meaning(Verdict v);
metrics::Batch canary_metrics(const config::CanaryTarget& t, const CanaryState& s);

// Identity of a canary, so that alert rules can exclude the canary's own
// (deliberately caused) errors: fsaudit_canary_info{target,fs,layout,mountpoint,pool},
// fsaudit_canary_device_info{target,device,path} per member (device: block::kernel_name_or_target), fsaudit_canary_interval_seconds{target}.
void canary_identity_metrics(metrics::Batch& b, const config::CanaryTarget& t, const HostPaths& host);
// The identity series of every configured canary. The daemon publishes them from the config at
// start and on every reload, independent of any cycle: a first, slow or timed-out cycle must not
// let the alert rules' canary exclusions lapse. (The probe itself no longer exports them.)
metrics::Batch canary_identity_batch(const config::CanaryConfig& cfg, const HostPaths& host);

std::vector<std::unique_ptr<Probe>> make_canary_probes(const config::Config& cfg);
// For the scheduler: the canary's own schedule when `p` is a canary probe.
std::optional<CanarySchedule> canary_schedule(const Probe& p);

}  // namespace fsaudit::canary
