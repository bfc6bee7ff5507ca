#pragma once
// A probe type supplies only "run once against one target, with a deadline" (design note 3).
// Ticks, jitter, timeouts, windows and overlap are the scheduler's business.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/runner/runner.hpp"
#include "daemon/core/window.hpp"

namespace fsaudit {

// A monitored filesystem (from mountinfo or config), or the host itself for host-wide probes.
struct Target {
  std::string name;        // label value `target`: the mount point, or "host" for host-wide probes
  std::string mountpoint;  // empty for the host target
  std::string fstype;      // "zfs", "btrfs", "bcachefs", "xfs", "ext4", "fuse.zfs-fuse"?, ...
  std::string source;      // mount source: /dev/sda1, pool/dataset, ...
  std::string mount_options;  // per-mount options (ro/rw, ...)
  std::string super_options;  // superblock options (ro after an error remount)
  unsigned dev_major = 0, dev_minor = 0;
  bool is_host() const { return mountpoint.empty(); }
  static Target host() { return Target{"host", "", "", "", "", "", 0, 0}; }
};

// Which external tool path to use for a name ("zpool" -> "/usr/sbin/zpool", or a test's fake).
using ToolPaths = std::map<std::string, std::string>;

struct MountEntry;
// The mount table as read once per scheduler cycle, shared read-only by every run of that cycle.
using MountSnapshot = std::shared_ptr<const std::vector<MountEntry>>;

struct ProbeContext {
  const HostPaths& host;
  CommandRunner& runner;
  const Clock& clock;
  const ToolPaths& tools;
  std::filesystem::path state_dir;  // persistent state (cursors, canary records)
  std::stop_token stop;             // set when the daemon stops or the run is past its deadline
  SteadyTime deadline;
  // The mount table of the current cycle; null when the caller has none (unit tests, one-shot
  // tools): read the host's then. See mount_table() in daemon/probe/targets.hpp.
  MountSnapshot mounts = nullptr;
  // Keeps alive what host/tools refer to (the daemon's config snapshot) for as long as the run.
  std::shared_ptr<const void> owner = nullptr;
  // Someone asked for this run now (fsauditctl run, canary run): a probe that skips runs it
  // considers too early or outside its window runs anyway.
  bool requested = false;
  // False while this job's last run's metrics are still published as that run returned them: a
  // probe whose metrics for the target are the same may then answer ProbeResult::same_as_last() and
  // skip building and publishing them again. True on a job's first run and after a run that failed
  // (it published only what it could) or timed out (its stale metrics were dropped).
  bool republish = true;
  // The probe budget's stretch (daemon/scheduler/run_budget.hpp): the factor every per-filesystem
  // interval is multiplied by on this host, >= 1. A host-wide probe that re-checks something of every
  // filesystem on its own timer (the latency sampler's replan) stretches that timer by it too.
  double budget_stretch = 1;

  std::string tool(const std::string& name) const {
    auto it = tools.find(name);
    return it == tools.end() || it->second.empty() ? name : it->second;
  }
  // The time left before this run's deadline, for the runner's timeout.
  std::chrono::milliseconds remaining() const;
};

enum class Outcome {
  ok,
  failed,          // the probe could not do its job: reason says why (exported, logged)
  not_applicable,  // nothing to do here (no ZFS on this host): not a failure
};

struct ProbeResult {
  Outcome outcome = Outcome::ok;
  std::string reason;
  metrics::Batch metrics;
  // The run succeeded and its metrics are those the job's last run published: nothing to publish.
  bool unchanged = false;
  // The run saw the kernel report an error on a filesystem. The kernel may have turned it read-only,
  // a change of the mount table it does not announce: the daemon reads the table again at once.
  bool mount_table_stale = false;

  static ProbeResult ok(metrics::Batch b) { return {Outcome::ok, "", std::move(b)}; }
  // Only when ctx.republish is false (the scheduler turns it into a failure otherwise).
  static ProbeResult same_as_last() { return {Outcome::ok, "", {}, true}; }
  static ProbeResult failed(std::string why, metrics::Batch b = {}) {
    return {Outcome::failed, std::move(why), std::move(b)};
  }
  static ProbeResult not_applicable(std::string why) { return {Outcome::not_applicable, std::move(why), {}}; }
};

// A probe's own schedule. Lightweight probes take theirs from config `probes.<name>`; deep tests
// (canary, scrub, latency) carry their own, from their config sections, by overriding own_schedule().
struct ProbeSchedule {
  std::chrono::milliseconds interval{std::chrono::seconds(30)};
  std::chrono::milliseconds jitter{0};
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
  std::optional<CalendarWindow> window;  // only start inside it
};

enum class Scope {
  per_target,  // run once for each target that applies_to() accepts
  host,        // run once per host, with Target::host()
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string name() const = 0;
  virtual Scope scope() const { return Scope::per_target; }
  virtual bool applies_to(const Target&) const { return true; }
  // nullopt: use config `probes.<name()>`. Deep tests return their own interval/window/timeout.
  virtual std::optional<ProbeSchedule> own_schedule() const { return std::nullopt; }
  // True for probes whose run is a few cheap reads (statfs, sysfs, the mount snapshot): the scheduler
  // runs all due targets of such a probe one after the other in one task, on one cycle grid, instead
  // of a thread wake-up per target. Each target keeps its own deadline, stuck state and result.
  virtual bool batched() const { return false; }
  // True for probes that read what other probes saved (the setup audit reads the scrub probe's
  // state): `fsauditd --once` runs them once more after the first cycle, so that its one scrape
  // does not depend on which run of that cycle happened to finish first.
  virtual bool reads_other_probes() const { return false; }
  // True for host-wide probes whose run walks every watched filesystem, or what grows with them (the
  // scrub pass: discovery and the process listing; the disk inventory): past the probe budget their
  // interval is stretched by the same factor as the per-filesystem ones (run_budget.hpp), so the
  // host's cost stops growing with its filesystems there too.
  virtual bool sweeps_targets() const { return false; }
  // Batched probes: called once before a task runs the due `targets` one after the other, on that
  // task's thread, with the first run's timeout as deadline. A probe may fetch there what those runs
  // will need in one round trip (the capacity probe's statfs calls go to its helper together); each
  // run still makes its own decision, with its own deadline, stuck state and result. Must not throw.
  virtual void prepare_batch(const std::vector<const Target*>& /*targets*/, ProbeContext&) {}
  // Called on a worker thread. Must not throw (the scheduler catches anyway and reports the text).
  // Different targets of the same probe may run concurrently; one target never overlaps itself.
  virtual ProbeResult run(const Target& target, ProbeContext& ctx) = 0;
  // An operator's request (over D-Bus), e.g. the scrub probe's start|pause|cancel TARGET: carried
  // out now, on a worker thread; the answer is one sentence for the operator.
  virtual Result<std::string> request(const std::string& action, const std::string& target, ProbeContext&) {
    return err(name() + " takes no requests (asked to " + action + " " + target + ")");
  }
};

}  // namespace fsaudit
