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
#include <set>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/scrub_driver/drivers.hpp"
#include "probes/scrub/helper_route.hpp"
#include "probes/zfs/probe.hpp"

namespace fsaudit::scrub {

class ScrubProbe final : public Probe {
 public:
  // `zpool_share`: the zfs probe's last `zpool status`, taken instead of running zpool when recent.
  ScrubProbe(config::ScrubConfig cfg, TargetSelection selection, std::string privileged_helper = "",
             std::shared_ptr<zfs::StatusShare> zpool_share = nullptr);
  std::string name() const override { return "scrub"; }
  Scope scope() const override { return Scope::host; }
  // Its pass discovers from every mount and lists every process: stretched with the probe budget.
  bool sweeps_targets() const override { return true; }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;
  // An operator's request (fsauditctl scrub start|pause|cancel TARGET): `target` must be one of
  // the targets this probe scrubs (its discovery under the scrub config). The driver carries it
  // out now; the planner then leaves that run to the operator (no window end, no automatic resume).
  Result<std::string> request(const std::string& action, const std::string& target, ProbeContext& ctx) override;
  // The same request as fsaudit-helper carries it out for an unprivileged fsauditd: `job` (when
  // > 0) must be the detached job this probe's state records for the target, else it is refused;
  // unless `operator_request`, the scrub policy (request_allowed, planner.hpp) applies and a pause
  // or cancel must name the recorded job when there is one. The answer also says which job the
  // target has now and what the driver learned.
  struct RequestDone {
    bool ok = false;
    std::string text;  // what was done, or why not
    ErrorKind kind = ErrorKind::failed;  // of why not: the driver's error's kind
    int job_pid = 0;
    std::string job_dir;
    bool pause_unsupported = false;
  };
  RequestDone carry_out_request(const std::string& action, const std::string& target, ProbeContext& ctx,
                                bool operator_request, int job = 0);

  // Tests: start, pause, resume and cancel through `t` as fsauditd does when it is not root and
  // names a helper (actions_via_helper), whoever runs the test.
  void set_helper_transport(HelperTransport t) { transport_ = std::move(t); }

  // fsaudit-helper: the detached jobs it starts are readable by this group (its caller's) alone.
  void set_job_group(gid_t g) { job_group_ = g; }

  // Canary filesystems and pools are corrupted on purpose and scrubbed by their own cycle: never
  // this probe's targets (a scheduled scrub there would race the canary's). Their mount points leave
  // the selection; their pools, and md arrays mounted at them, leave discovery.
  void exclude_canaries(const config::CanaryConfig& canaries);

  // Tests: the local time zone offset used for windows (default: the host's).
  void set_tz_offset(long seconds) { tz_offset_ = seconds; }

  struct Pass;  // one run's shared view (probe.cpp)

 private:
  Pass begin_pass(ProbeContext& ctx);
  static Result<std::string> carry_out(const std::string& action, const ScrubTarget& t, Driver& driver, TargetState& st,
                                       const Observation& obs, Pass& pass);
  static std::string unknown_target_message(const std::string& target, const std::vector<ScrubTarget>& targets);
  // The targets, and (when `discovered` is given) what their discovery already observed, by key.
  // `shared`: the zfs probe's recent status may stand for this pass's own (not for an operator's request).
  std::vector<ScrubTarget> discover(ProbeContext& ctx, std::vector<std::string>& notes,
                                    std::map<std::string, Observation>* discovered = nullptr, bool shared = false);
  void add_pools(const zfs::ZfsStatusReport& rep, std::vector<ScrubTarget>& out,
                 std::map<std::string, Observation>* discovered) const;
  void discover_pools(ProbeContext& ctx, std::vector<std::string>& notes, std::vector<ScrubTarget>& out,
                      std::map<std::string, Observation>* discovered);
  bool excluded_by_selection(const std::string& name) const;
  std::optional<double> io_load(ProbeContext& ctx, std::string& source);
  std::string detach_helper(ProbeContext& ctx) const;

  config::ScrubConfig cfg_;
  TargetSelection selection_;
  std::set<std::string> canary_pools_, canary_mounts_;
  std::string privileged_helper_;
  std::shared_ptr<zfs::StatusShare> zpool_share_;
  HelperTransport transport_;  // empty: the drivers act in this process
  std::optional<gid_t> job_group_;
  std::optional<long> tz_offset_;
  std::mutex run_mu_;  // a scheduled run and a request never overlap
  std::mutex mu_;
  std::map<std::string, std::uint64_t> last_diskstats_;
  std::map<std::string, std::string> saved_;  // under run_mu_: state files as last written
  KernelThreadMemo kernel_threads_;           // under run_mu_: what the passes' process listings saw
  // What discover() took from the mount table, and the snapshot it took it from (under run_mu_): the
  // daemon hands every run the same snapshot until the table changes, so a pass over 10,000 mounts
  // selects and matches them once per change, not every 30 s.
  struct FromMounts {
    MountSnapshot table;
    std::vector<ScrubTarget> targets;
    std::set<std::string> left_out_arrays;
  };
  FromMounts from_mounts_;
  double last_diskstats_ms_ = 0;
};

std::unique_ptr<Probe> make_scrub_probe(const config::Config& cfg, std::shared_ptr<zfs::StatusShare> zpool_share = nullptr);

}  // namespace fsaudit::scrub
