#pragma once
// The "scrub" probe: one host-wide run every ~30 s that observes every scrub-capable target
// (ZFS pools, btrfs/xfs/bcachefs mounts, md arrays), times the scrubs it sees (anybody's), and
// starts, pauses, resumes or cancels the scrubs it schedules. It never waits for a scrub.
//
// Host scope, not per target: the concurrency limit ("at most N scrubs per host") needs one view of
// all targets, and ZFS pools and md arrays are not mounts.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/scrub/drivers.hpp"

namespace fsaudit::scrub {

class ScrubProbe final : public Probe {
 public:
  ScrubProbe(config::ScrubConfig cfg, TargetSelection selection, std::string privileged_helper = "");
  std::string name() const override { return "scrub"; }
  Scope scope() const override { return Scope::host; }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;
  // An operator's request (fsauditctl scrub start|pause|cancel TARGET): `target` must be one of
  // the targets this probe scrubs (its discovery under the scrub config). The driver carries it
  // out now; the planner then leaves that run to the operator (no window end, no automatic resume).
  Result<std::string> request(const std::string& action, const std::string& target, ProbeContext& ctx) override;

  // Tests: the local time zone offset used for windows (default: the host's).
  void set_tz_offset(long seconds) { tz_offset_ = seconds; }

  struct Pass;  // one run's shared view (probe.cpp)

 private:
  Pass begin_pass(ProbeContext& ctx);
  static Result<std::string> carry_out(const std::string& action, const ScrubTarget& t, Driver& driver, TargetState& st,
                                       const Observation& obs, Pass& pass);
  static std::string unknown_target_message(const std::string& target, const std::vector<ScrubTarget>& targets);
  std::vector<ScrubTarget> discover(ProbeContext& ctx, std::vector<std::string>& notes);
  std::optional<double> io_load(ProbeContext& ctx, std::string& source);
  std::string detach_helper(ProbeContext& ctx) const;

  config::ScrubConfig cfg_;
  TargetSelection selection_;
  std::string privileged_helper_;
  std::optional<long> tz_offset_;
  std::mutex run_mu_;  // a scheduled run and a request never overlap
  std::mutex mu_;
  std::map<std::string, std::uint64_t> last_diskstats_;
  double last_diskstats_ms_ = 0;
};

std::unique_ptr<Probe> make_scrub_probe(const config::Config& cfg);

}  // namespace fsaudit::scrub
