#include "daemon/app/daemon.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "daemon/config/config.hpp"
#include "daemon/core/allocator.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/units.hpp"
#include "daemon/core/pipe_child.hpp"
#include "daemon/core/trust.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/http/server.hpp"
#include "daemon/http/status.hpp"
#include "daemon/metrics/store.hpp"
#include "daemon/probe/targets.hpp"
#include "daemon/runner/runner.hpp"
#include "daemon/scheduler/run_budget.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/systemd/logging.hpp"
#include "daemon/systemd/notify.hpp"

#ifndef FSAUDIT_VERSION
#define FSAUDIT_VERSION "0.0.0"
#endif

namespace fsaudit::app {
namespace {

using namespace std::chrono_literals;
constexpr const char* kDefaultConfig = "/etc/fsaudit/fsaudit.yaml";
constexpr auto kMountTableRecheck = 30s;  // the mount table read when no change was announced

std::string resolve_config_path(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  if (std::filesystem::exists(kDefaultConfig, ec)) return kDefaultConfig;
  return "";
}

// `tools:` names the binaries fsauditd runs: only root (or, unprivileged, fsauditd's own user) may
// be able to change the file that says so.
void require_trusted(const std::string& path) {
  if (auto trusted = check_trusted_file(path, ::geteuid()); !trusted)
    throw std::runtime_error("refusing config " + path + ": " + trusted.error());
}

config::Config load(const std::string& path) {
  if (path.empty()) return config::default_config();
  require_trusted(path);
  return config::load_config_file(path);
}

// Signals are taken by one thread with sigwait, so no handler runs on a probe's stack. The state it
// writes is shared-owned, so a late signal during exit touches nothing freed.
struct SignalState {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false, reload = false;
  bool control = false;  // a D-Bus request is queued
};

void block_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts: all inherit the mask
  signal(SIGPIPE, SIG_IGN);
}

void start_signal_thread(std::shared_ptr<SignalState> st) {
  std::thread([st] {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      std::lock_guard l(st->mu);
      if (sig == SIGHUP) st->reload = true;
      else st->stop = true;
      st->cv.notify_all();
    }
  }).detach();
}

// What the daemon remembers of one job (probe on a target) whose last outcome was anything but a plain
// success: the failure it last logged and what its self series last said. A job without an entry is
// fine and has no self series (a per-filesystem probe's success is not a series): at 10,000
// filesystems an entry for each of 30,000 jobs was 5 MB that said "fine" 30,000 times.
struct JobSelf {
  std::string last_reason;
  bool last_ok = true;
  // What its self series last said: an unchanged state is not published again.
  struct Said {
    bool failed = false, stuck = false;
    std::optional<bool> applicable;  // the fsaudit_probe_applicable series, where there is one
    std::string reason;              // fsaudit_probe_failure_info's, while failing
    bool operator==(const Said&) const = default;
  };
  Said published;  // Said{}: nothing
  bool plain() const { return last_ok && published == Said{}; }
};

// A probe type's totals (fsaudit_probe_runs_total, ...): published at most this often while runs keep
// finishing, times the probe budget's stretch, the latest always within that time. A cycle of a
// thousand targets finishes a thousand runs in a second; at 10,000 filesystems a publish a second per
// probe was a twentieth of the daemon's CPU.
constexpr auto kProbeTotalsEvery = std::chrono::seconds(1);

struct ProbeSelf {
  std::uint64_t seq = 0;
  std::optional<ProbeTotals> pending;
  std::chrono::steady_clock::time_point published{};
};

class Daemon {
 public:
  Daemon(std::string config_path, config::Config cfg, const Extensions& ext)
      : config_path_(std::move(config_path)), cfg_(std::move(cfg)), ext_(ext) {}

  int run(bool once);

 private:
  // The main loop's timers: when it last pinged the watchdog, wrote the status line, logged what
  // READY waits for.
  struct LoopClocks {
    std::optional<std::chrono::microseconds> watchdog;
    std::chrono::steady_clock::time_point started, last_status, last_pending_log;
    SteadyTime last_watchdog{};
  };
  bool start(bool once);
  void main_loop(bool once);
  void log_pending_first_runs(LoopClocks& clocks);
  void notify_systemd(LoopClocks& clocks, bool ready, std::chrono::steady_clock::time_point now);
  bool wait_and_answer(SteadyTime wake);
  int stop(bool once);
  void apply_config();
  bool start_exposer();
  void start_bus();
  void run_control();
  void run_request(const dbus::JobRequest& r);
  void refresh_targets(bool force);
  void publish_build_info();
  RunBudgetPlan budget_plan_;  // the probe budget's stretch of the current job list (publish_build_info)
  void publish_run_config();
  ProbeContext make_context(std::stop_token stop, SteadyTime deadline);
  void on_outcome(const JobOutcome& o);
  void publish_job_locked(const JobOutcome& o);
  void publish_probe_totals_locked(const std::string& probe, ProbeSelf& ps);
  // The probes' totals still pending: those last published totals_every() ago or more, or all.
  void flush_probe_totals(bool all);
  std::chrono::steady_clock::duration totals_every() const {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        kProbeTotalsEvery * budget_stretch_.load(std::memory_order_relaxed));
  }
  // --once: runs the probes that read other probes' saved state again (their first run raced with
  // those probes); the count of runs left, or null when there is none.
  std::shared_ptr<std::atomic<int>> rerun_readers_of_others();  // the main loop, every wake (at least once a second)
  struct ReloadVerdict {
    bool ok = true;
    std::string message;  // what an operator reads from `fsauditctl reload`
  };
  ReloadVerdict reload();
  std::string status_line();

  std::string config_path_;
  config::Config cfg_;  // the main thread's working copy; probe runs never see it (see run_cfg_)
  // What probe runs use: an immutable snapshot of the config and of the cycle's mount table. A
  // reload or refresh swaps the pointers; runs in flight keep the ones they started with.
  std::mutex run_mu_;
  std::shared_ptr<const config::Config> run_cfg_;
  MountSnapshot mounts_;
  // budget_plan_.stretch, read by the runs' contexts and the probes' totals on other threads.
  std::atomic<double> budget_stretch_{1};
  bool once_ = false;
  bool last_reload_ok_ = true;
  std::shared_ptr<metrics::Store> store_ = std::make_shared<metrics::Store>();
  std::unique_ptr<http::Server> exposer_;
  std::shared_ptr<http::CapacityTrend> trend_ = std::make_shared<http::CapacityTrend>();  // the page's and D-Bus'

  std::string exposer_addr_;
  ProcessRunner runner_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::shared_ptr<Probe>> probes_;
  // Shared with the jobs' specs: one copy of each target, whatever its probes.
  std::vector<std::shared_ptr<const Target>> targets_;
  std::size_t targets_fingerprint_ = 0;  // a hash of the targets and probes, like the mount table's
  std::set<std::string> explicit_mounted_;  // explicit target paths seen as mount points
  // An explicit target whose path was a mount point and no longer is: its filesystem was unmounted.
  // Target selection then finds the filesystem below it (or none); the mount probe's job for it is
  // gone, so the daemon says it: the mount probe's failure series and the page's "not mounted".
  void publish_unmounted(const std::vector<MountEntry>& mounts, std::vector<std::string>& keep);
  SteadyTime last_target_refresh_{};
  std::unique_ptr<MountTableWatch> mount_watch_;
  MountTableReader mount_reader_;  // main loop only
  std::atomic<bool> mount_table_stale_{false};  // a probe run says: read the mount table again now
  std::filesystem::path mount_watch_root_;

  std::mutex mu_;  // guards self_ and probe_self_, and orders their publishing
  std::shared_ptr<SignalState> sig_ = std::make_shared<SignalState>();
  std::atomic<bool> ready_{false};  // the first cycle is done: outcomes wake the main loop only when it must act
  std::unordered_map<std::string, JobSelf> self_;  // by job key; hashed: keys share long prefixes
  // Entries of self_ whose last run failed: the status line every 30 s counted them in a walk of every
  // job (30,000 at 10,000 filesystems).
  std::size_t failing_jobs_ = 0;
  std::map<std::string, ProbeSelf> probe_self_;
  Extensions ext_;
  std::unique_ptr<LabHandle> lab_;  // lab mode: loop-device canaries this process created

  std::mutex ctl_mu_;  // guards the two below: the D-Bus thread reads/writes them
  std::vector<dbus::JobRequest> ctl_queue_;
  // What D-Bus lists of the probes; the targets as the jobs' own shared targets, their names copied only
  // when asked (30,000 copied names at 10,000 filesystems, kept between reloads).
  struct ProbeSnapshot {
    dbus::ProbeInfo info;  // without targets
    std::vector<std::shared_ptr<const Target>> targets;
  };
  std::vector<ProbeSnapshot> probe_snapshot_;
  std::shared_ptr<dbus::Service> bus_;  // shared: a manual run may finish after shutdown began
};


void Daemon::publish_unmounted(const std::vector<MountEntry>& mounts, std::vector<std::string>& keep) {
  for (const auto& t : cfg_.watched_targets().explicit_targets) {
    const bool mounted = std::any_of(mounts.begin(), mounts.end(), [&](const MountEntry& m) { return m.mountpoint == t.path; });
    if (mounted) {
      explicit_mounted_.insert(t.path);
      continue;
    }
    if (!explicit_mounted_.count(t.path)) continue;  // a directory inside a filesystem, or never mounted
    const std::string name = t.name.empty() ? t.path : t.name;
    // Named, the target now names the filesystem below it: its own series say so (not two of each).
    if (std::any_of(targets_.begin(), targets_.end(), [&](const auto& x) { return x->name == name; })) continue;
    const std::string reason = "not mounted: " + t.path + " is not in the mount table (it was mounted before)";
    metrics::Labels l{{"probe", "mount"}, {"target", name}};
    metrics::Batch b;
    b.gauge("fsaudit_probe_success",
            "1 if the last run of the probe on the target succeeded (or had nothing to do), 0 if it failed.", l, 0);
    auto li = l;
    li["reason"] = reason;
    b.info("fsaudit_probe_failure_info", "Why the probe's last run failed (value 1; present only while failing).", li);
    auto& f = b.status.fs(name);
    f.mounted = false;
    f.problems.push_back({metrics::Severity::critical, reason, "FsauditProbeFailing"});
    b.status.runs.push_back({"mount", name, reason, false, false, false});
    keep.push_back("unmounted\x1f" + name);
    store_->publish("unmounted\x1f" + name, b);
  }
}

void Daemon::publish_build_info() {
  metrics::Batch b;
  b.info("fsaudit_build_info", "fsauditd build information (value 1); allocator is the malloc it runs on.",
         {{"version", FSAUDIT_VERSION}, {"allocator", allocator_info().name}});
  b.gauge("fsaudit_config_last_reload_success", "1 if the last configuration (re)load succeeded.", {},
          last_reload_ok_ ? 1 : 0);
  b.gauge("fsaudit_targets", "Number of filesystems currently monitored.", {}, static_cast<double>(targets_.size()));
  b.gauge("fsaudit_probe_budget_stretch_ratio",
          "The factor every per-filesystem probe interval is stretched by to keep the host's per-filesystem runs "
          "within probe_budget.runs_per_second (1: within it, intervals as configured).",
          {}, budget_plan_.stretch);
  for (const auto& [probe, seconds] : budget_plan_.interval_seconds)
    b.gauge("fsaudit_probe_interval_seconds",
            "The interval each filesystem is probed at by the probe, after the probe budget's stretch.",
            {{"probe", probe}}, seconds);
  b.status.version = FSAUDIT_VERSION;
  b.status.config_reload_ok = last_reload_ok_;
  // From the config, not from a cycle: alert exclusions hold before, during and after any cycle.
  // Published first: a scrape that sees this build's series already sees its canaries' identity.
  if (ext_.config_metrics) store_->publish("canary-identity", ext_.config_metrics(cfg_));
  store_->publish("build", std::move(b));
}

bool Daemon::start_exposer() {
  http::ServerOptions o;
  o.address = cfg_.listen_address;
  o.port = cfg_.listen_port;
  o.trend = trend_;
  o.feed_trend = [store = store_](http::CapacityTrend& t, double now) {
    store->visit_status([&](const std::string&, const metrics::StatusItems& items) { t.observe(items, now); });
    t.expire(now);
  };
  std::string addr = o.address + ":" + std::to_string(o.port) + "|" + cfg_.web_config_file;
  if (exposer_ && addr == exposer_addr_) return true;
  if (!cfg_.web_config_file.empty()) {
    auto w = http::load_web_config(cfg_.web_config_file);
    if (!w) return logging::log(spdlog::level::err, w.error()), false;
    o.web = std::move(*w);
  }
  exposer_.reset();  // the port is taken until the old listener is gone
  auto s = http::Server::start(std::move(o), [store = store_] { return store->exposition(); },
                               [store = store_] { return store->status(); });
  if (!s) {
    bool port = s.kind() == ErrorKind::in_use;
    logging::log(spdlog::level::err, s.error() + (port ? " (is another fsauditd or exporter using the port? change 'listen:')" : ""));
    return false;
  }
  exposer_ = std::move(*s);
  exposer_addr_ = addr;
  spdlog::info("serving metrics on {}/metrics, status page on {}/", exposer_->url(), exposer_->url());
  return true;
}

void Daemon::publish_run_config() {
  auto snap = std::make_shared<const config::Config>(cfg_);
  std::lock_guard l(run_mu_);
  run_cfg_ = std::move(snap);
}

ProbeContext Daemon::make_context(std::stop_token stop, SteadyTime deadline) {
  std::shared_ptr<const config::Config> cfg;
  MountSnapshot mounts;
  {
    std::lock_guard l(run_mu_);
    cfg = run_cfg_;
    mounts = mounts_;
  }
  ProbeContext ctx{cfg->host, runner_, SystemClock::instance(), cfg->tools, cfg->state_dir, stop, deadline};
  ctx.mounts = std::move(mounts);
  ctx.budget_stretch = budget_stretch_.load(std::memory_order_relaxed);
  ctx.owner = std::move(cfg);
  return ctx;
}

void Daemon::apply_config() {
  std::vector<std::shared_ptr<Probe>> probes;
  if (!ext_.make_probes) return;
  for (auto& p : ext_.make_probes(cfg_)) {
    if (once_ && ext_.skip_once && ext_.skip_once(*p)) continue;
    probes.push_back(std::move(p));
  }
  probes_ = std::move(probes);
}

void Daemon::refresh_targets(bool force) {
  auto now = std::chrono::steady_clock::now();
  // Read when the kernel announces a change (within a second: the main loop wakes at least that
  // often), when the kernel log watcher counted a storage error (the kernel may have turned that
  // filesystem read-only: it keeps its mount, and nothing is announced), and every kMountTableRecheck
  // for whatever else changes unannounced. With a thousand mounts, reading the table is the kernel printing
  // a thousand lines of options: every 10 s it was 9 % of the daemon's own CPU.
  if (!mount_watch_ || mount_watch_root_ != cfg_.host.procfs) {
    mount_watch_ = std::make_unique<MountTableWatch>(cfg_.host);
    mount_watch_root_ = cfg_.host.procfs;
  }
  bool announced = mount_watch_->changed();
  // A kernel error report: the kernel may have turned that filesystem read-only, unannounced.
  bool stale = mount_table_stale_.exchange(false, std::memory_order_relaxed);
  // The unannounced re-read is host-wide work that grows with the mounts: past the probe budget it is
  // stretched with the per-filesystem intervals (an error report still makes it read at once).
  const auto recheck = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      kMountTableRecheck * std::max(1.0, budget_plan_.stretch));
  if (!force && !announced && !stale && now - last_target_refresh_ < recheck) return;
  last_target_refresh_ = now;
  // The one read of the mount table per cycle: targets come from it, and probe runs get it through
  // their context instead of reading mountinfo themselves.
  auto table = mount_reader_.read(cfg_.host);
  // The same text as last time: the same snapshot, the same targets (a forced refresh goes on: a reload).
  if (table && mount_reader_.unchanged() && !force) return;
  MountSnapshot snapshot;
  if (table) snapshot = std::move(*table);
  else logging::log(spdlog::level::err, table.error());
  {
    std::lock_guard l(run_mu_);
    mounts_ = snapshot;
  }
  static const std::vector<MountEntry> kNone;
  const std::vector<MountEntry>& mounts = snapshot ? *snapshot : kNone;
  std::vector<std::string> warnings;
  auto targets = select_targets(mounts, cfg_.watched_targets(), &warnings);
  std::string fp;
  for (const auto& t : targets) fp += t.name + "\x1f" + t.fstype + "\x1f" + t.source + "\x1e";
  for (const auto& p : probes_) fp += p->name() + ",";
  const auto fp_hash = std::hash<std::string>{}(fp);
  if (!force && fp_hash == targets_fingerprint_) return;
  for (const auto& w : warnings) logging::log(spdlog::level::warn, w);
  targets_fingerprint_ = fp_hash;
  targets_.clear();
  targets_.reserve(targets.size());
  for (auto& t : targets) targets_.push_back(std::make_shared<const Target>(std::move(t)));

  std::vector<JobSpec> jobs;
  for (const auto& p : probes_) {
    ProbeSchedule sched;
    if (auto own = p->own_schedule()) {
      sched = *own;
    } else {
      const auto& c = cfg_.schedule(p->name());
      if (!c.enabled) continue;
      sched = ProbeSchedule{c.interval, c.jitter, c.timeout, std::nullopt};
    }
    const auto window = sched.window && !once_ ? std::make_shared<const CalendarWindow>(*sched.window) : nullptr;
    auto add = [&](const std::shared_ptr<const Target>& t) {
      JobSpec j;
      j.probe = p;
      j.target = t;
      j.interval = sched.interval;
      j.jitter = once_ ? std::chrono::milliseconds(0) : sched.jitter;
      j.timeout = sched.timeout;
      j.window = window;
      jobs.push_back(std::move(j));
    };
    if (p->scope() == Scope::host) {
      if (p->applies_to(*shared_host_target())) add(shared_host_target());
    } else {
      for (const auto& t : targets_)
        if (p->applies_to(*t)) add(t);
    }
  }
  auto plan = apply_run_budget(jobs, RunBudget{cfg_.probe_budget.runs_per_second});
  if (plan.stretch != budget_plan_.stretch && (plan.stretch > 1 || budget_plan_.stretch > 1)) {
    std::string each;
    for (const auto& [probe, seconds] : plan.interval_seconds)
      each += (each.empty() ? "" : ", ") + probe + " " +
              format_duration(std::chrono::milliseconds(static_cast<long long>(seconds * 1000)));
    logging::log(spdlog::level::info,
                 fmt::format("{:.0f} per-filesystem probe runs a second at the configured intervals, probe_budget.runs_per_"
                             "second is {:.0f}: every per-filesystem interval x{} ({})",
                             plan.demand, cfg_.probe_budget.runs_per_second, plan.stretch, each));
  }
  budget_plan_ = std::move(plan);
  budget_stretch_.store(budget_plan_.stretch, std::memory_order_relaxed);
  std::vector<std::string> keep = {"build", "canary-identity"};
  for (const auto& j : jobs) {
    keep.push_back(j.key());
    keep.push_back("self\x1f" + j.key());
  }
  {
    std::map<std::string, ProbeSnapshot> snap;
    for (const auto& j : jobs) {
      auto& ps = snap[j.probe->name()];
      auto& pi = ps.info;
      pi.name = j.probe->name();
      pi.scope = j.probe->scope() == Scope::host ? "host" : "per_target";
      pi.interval_ms = j.interval.count();
      pi.timeout_ms = j.timeout.count();
      ps.targets.push_back(j.target);
    }
    std::lock_guard l(ctl_mu_);
    probe_snapshot_.clear();
    for (auto& [n, pi] : snap) probe_snapshot_.push_back(std::move(pi));
  }
  for (const auto& p : probes_) keep.push_back("self-probe\x1f" + p->name());
  publish_unmounted(mounts, keep);
  scheduler_->set_jobs(std::move(jobs));
  store_->retain(keep);
  {
    // A job that goes away takes its remembered self state along: if its target comes back, its
    // series are published afresh, not skipped as "unchanged".
    std::set<std::string> live(keep.begin(), keep.end());
    std::lock_guard l(mu_);
    std::erase_if(self_, [&](const auto& kv) {
      const bool gone = !live.count(kv.first);
      if (gone && !kv.second.last_ok) --failing_jobs_;
      return gone;
    });
  }
  publish_build_info();
  spdlog::info("monitoring {} filesystem(s) with {} probe type(s)", targets_.size(), probes_.size());
}

void Daemon::on_outcome(const JobOutcome& o) {
  // Under mu_ from the check to the publish, so a stale outcome can never overwrite a newer one.
  std::lock_guard lock(mu_);
  // The job's own series first, then the probe's totals: a scrape that sees a failure counted in
  // fsaudit_probe_failures_total also sees that job's fsaudit_probe_success 0 and its reason.
  publish_job_locked(o);
  if (o.result.mount_table_stale) mount_table_stale_.store(true, std::memory_order_relaxed);
  const std::string probe = o.spec->probe->name();
  auto& ps = probe_self_[probe];
  if (o.seq > ps.seq) {
    ps.seq = o.seq;
    ps.pending = o.probe_totals;
    if (std::chrono::steady_clock::now() - ps.published >= totals_every()) publish_probe_totals_locked(probe, ps);
  }
}

void Daemon::publish_job_locked(const JobOutcome& o) {
  const std::string key = o.spec->key();
  const std::string probe = o.spec->probe->name();
  const std::string& target = o.spec->target->name;
  bool failed = o.result.outcome == Outcome::failed;
  bool log_it = false;
  // A newer state of this job is already published, or will be (out of order delivery): see JobOutcome.
  if (o.superseded()) return;
  auto entry = self_.find(key);
  JobSelf fresh;
  JobSelf& s = entry != self_.end() ? entry->second : fresh;
  // Whatever returns below, the entry is kept only while the job is not plainly fine.
  struct Keep {
    std::unordered_map<std::string, JobSelf>& self;
    decltype(entry) it;
    const std::string& key;
    JobSelf& fresh;
    ~Keep() {
      if (it != self.end()) {
        if (it->second.plain()) self.erase(it);
      } else if (!fresh.plain()) {
        self.emplace(key, std::move(fresh));
      }
    }
  } keep{self_, entry, key, fresh};
  log_it = !o.late_finish && (failed ? (s.last_ok || s.last_reason != o.result.reason) : !s.last_ok);
  if (s.last_ok && failed) ++failing_jobs_;
  else if (!s.last_ok && !failed) --failing_jobs_;
  s.last_ok = !failed;
  s.last_reason = failed ? o.result.reason : "";
  if (log_it) {
    logging::Fields f{{"probe", probe}, {"target", target}};
    if (failed) logging::log(spdlog::level::warn, "probe " + probe + " on " + target + " failed: " + o.result.reason, f);
    else logging::log(spdlog::level::info, "probe " + probe + " on " + target + " recovered", f);
  }
  // A timed-out run drops its stale samples, and its late return publishes nothing of its own; a
  // failed run publishes what it still could.
  if (o.timed_out || o.late_finish) store_->remove(key);
  else if (!o.result.unchanged) store_->publish(key, o.result.metrics);
  JobSelf::Said said{failed, o.stuck, std::nullopt, failed ? o.result.reason.substr(0, 400) : std::string()};
  // Per-target probes only run where they apply; "nothing to do" is worth a series only for host-wide
  // probes (no ZFS on this host) or when a per-target run says so.
  if (o.spec->target->is_host() || o.result.outcome == Outcome::not_applicable)
    said.applicable = o.result.outcome != Outcome::not_applicable;
  if (s.published == said) return;
  s.published = said;  // the batch below is built from it alone
  metrics::Labels l{{"probe", probe}, {"target", target}};
  metrics::Batch b;
  // A host-wide probe's success is always a series. A per-filesystem probe's is one only while it
  // fails (0): 1,000 filesystems would otherwise carry 3,000 series that say 1 (issue 33's series
  // budget); the target's own series and fsaudit_probe_runs_total show that the probe runs.
  if (o.spec->target->is_host() || said.failed)
    b.gauge("fsaudit_probe_success",
            "1 if the last run of the probe succeeded (or had nothing to do), 0 if it failed; per-filesystem probes "
            "only while failing.",
            l, said.failed ? 0 : 1);
  if (said.applicable)
    b.gauge("fsaudit_probe_applicable", "0 if the probe found nothing to do on this target (e.g. no ZFS pools).", l,
            *said.applicable ? 1 : 0);
  if (said.stuck)
    b.gauge("fsaudit_probe_stuck",
            "1 while a run is past its timeout and has not returned (e.g. a hung statfs); absent otherwise.", l, 1);
  if (said.failed) {
    auto li = l;
    li["reason"] = said.reason;
    b.info("fsaudit_probe_failure_info", "Why the probe's last run failed (value 1; present only while failing).", li);
  }
  // The page lists a run only while it fails or is stuck; a run that is fine says nothing the target's
  // own facts do not (30,000 of them at 10,000 filesystems were over 10 MB of status items).
  if (said.failed || said.stuck)
    b.status.runs.push_back({probe, target, said.reason, !said.failed, said.stuck, o.spec->target->is_host()});
  store_->publish("self\x1f" + key, b);
}

void Daemon::publish_probe_totals_locked(const std::string& probe, ProbeSelf& ps) {
  if (!ps.pending) return;
  // Counters per probe type, summed over its targets: which target fails is in the per-job series.
  const auto& t = *ps.pending;
  metrics::Labels pl{{"probe", probe}};
  metrics::Batch b;
  b.counter("fsaudit_probe_runs_total", "Runs of the probe, over all its targets.", pl, static_cast<double>(t.runs));
  b.counter("fsaudit_probe_failures_total", "Failed runs of the probe (a timed-out run counts once), over all its targets.",
            pl, static_cast<double>(t.failures));
  b.counter("fsaudit_probe_timeouts_total", "Runs of the probe that exceeded their timeout, over all its targets.", pl,
            static_cast<double>(t.timeouts));
  b.counter("fsaudit_probe_duration_seconds_total",
            "Time spent in the probe's own runs (not waiting for a worker), over all its targets.", pl, t.seconds);
  b.gauge("fsaudit_probe_last_run_timestamp_seconds", "When the probe's last run on any target ended (Unix time).", pl,
          std::chrono::duration<double>(t.last_end.time_since_epoch()).count());
  store_->publish("self-probe\x1f" + probe, b);
  ps.pending.reset();
  ps.published = std::chrono::steady_clock::now();
}

void Daemon::flush_probe_totals(bool all) {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const auto every = totals_every();
  for (auto& [probe, ps] : probe_self_)
    if (all || now - ps.published >= every) publish_probe_totals_locked(probe, ps);
}

std::string Daemon::status_line() {
  std::size_t failing = 0, stuck = static_cast<std::size_t>(scheduler_->stuck_jobs());
  {
    std::lock_guard l(mu_);
    failing = failing_jobs_;
  }
  return std::to_string(targets_.size()) + " filesystems, " + std::to_string(probes_.size()) + " probe types, " +
         std::to_string(failing) + " failing, " + std::to_string(stuck) + " stuck; metrics on " + (exposer_ ? exposer_->url() : std::string("(none)"));
}

Daemon::ReloadVerdict Daemon::reload() {
  ReloadVerdict v;
  systemd::notify_reloading();
  std::string path = config_path_.empty() ? resolve_config_path("") : config_path_;
  try {
    config::Config next = load(path);
    // Listening and state location changes need the new values before anything else.
    // A web config is re-read on every reload (certificates get renewed); a broken one rejects the reload.
    if (!next.web_config_file.empty()) {
      if (auto w = http::load_web_config(next.web_config_file); !w) throw std::runtime_error(w.error());
      exposer_addr_.clear();
    }
    bool listen_changed = next.listen_address != cfg_.listen_address || next.listen_port != cfg_.listen_port ||
                          next.web_config_file != cfg_.web_config_file || exposer_addr_.empty();
    auto old = std::move(cfg_);
    cfg_ = std::move(next);
    if (listen_changed && !start_exposer()) {
      logging::log(spdlog::level::err, "config reload: keeping the old listen address");
      v.message = "; but the new listen address could not be opened, so the old one is kept (the journal says why)";
      cfg_.listen_address = old.listen_address;
      cfg_.listen_port = old.listen_port;
      cfg_.web_config_file = old.web_config_file;
      start_exposer();
    }
    if (lab_) lab_->add_to(cfg_);  // a reloaded file does not list the lab's canaries
    logging::set_level(cfg_.log_level);
    last_reload_ok_ = true;
    publish_run_config();
    apply_config();
    refresh_targets(true);
    spdlog::info("configuration reloaded from {}", path.empty() ? "(defaults)" : path);
    v.message = "configuration reloaded from " + (path.empty() ? std::string("(defaults)") : path) + v.message;
  } catch (const std::exception& e) {
    logging::log(spdlog::level::err, std::string("config reload rejected, keeping the running config: ") + e.what());
    last_reload_ok_ = false;
    publish_build_info();
    v = {false, "configuration rejected, the previous one keeps running: " + std::string(e.what())};
  }
  systemd::notify_reloaded();
  systemd::notify_status(status_line());
  return v;
}

void Daemon::start_bus() {
  if (cfg_.dbus_address == "none") return;
  dbus::Hooks h;
  // The same model as the page, with the page's capacity trend while the listener runs.
  h.status = [store = store_, trend = trend_]() -> Result<nlohmann::json> {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return http::to_json(http::build_status(store->status(), now, trend.get(), http::this_host()));
  };
  // The scrub probe's discovery under the scrub config, as it last published it; the probe checks
  // again when it carries a request out.
  h.scrub_targets = [store = store_]() -> Result<std::vector<std::string>> {
    std::vector<std::string> targets;
    for (const auto& [key, items] : store->status())
      for (const auto& f : items.filesystems)
        if (f.scrub) targets.push_back(!f.target.empty() ? f.target : !f.pool.empty() ? f.pool : f.device);
    return targets;
  };
  h.probes = [this] {
    std::lock_guard l(ctl_mu_);
    std::vector<dbus::ProbeInfo> r;
    for (const auto& ps : probe_snapshot_) {
      auto& pi = r.emplace_back(ps.info);
      pi.targets.reserve(ps.targets.size());
      for (const auto& t : ps.targets) pi.targets.push_back(t->name);
    }
    return r;
  };
  h.version = [] { return std::string(FSAUDIT_VERSION); };
  h.submit = [this](const dbus::JobRequest& r) {
    {
      std::lock_guard l(ctl_mu_);
      ctl_queue_.push_back(r);
    }
    std::lock_guard l(sig_->mu);
    sig_->control = true;
    sig_->cv.notify_all();
  };
  h.reload = [this] {
    std::lock_guard l(sig_->mu);
    sig_->reload = true;
    sig_->cv.notify_all();
  };
  auto s = dbus::Service::start(cfg_.dbus_address, std::move(h));
  if (!s) return logging::log(spdlog::level::warn, s.error() + "; fsauditctl will not reach this daemon");
  bus_ = std::move(*s);
  spdlog::info("D-Bus: {} on the {}", dbus::kBusName, cfg_.dbus_address == "system" ? "system bus" : cfg_.dbus_address);
}

// D-Bus requests run here, on the main loop, so they see the probes and targets the scheduler sees.
void Daemon::run_control() {
  std::vector<dbus::JobRequest> q;
  {
    std::lock_guard l(ctl_mu_);
    q.swap(ctl_queue_);
  }
  for (const auto& r : q) {
    if (r.kind == "canary_init") {
      if (!ext_.init_target) {
        bus_->job_finished(r.id, false, "this build cannot initialise canaries");
        continue;
      }
      bus_->job_started(r.id);
      pool_->submit([this, r, bus = bus_, cfg = std::make_shared<const config::Config>(cfg_)] {
        auto res = ext_.init_target(*cfg, r.target, runner_);
        bus->job_finished(r.id, res.ok(), res ? "canary " + r.target + " initialised" : res.error());
      });
      continue;
    }
    if (r.kind == "scrub") {
      run_request(r);
      continue;
    }
    // A run asked for over D-Bus is one of the scheduler's runs of that job: same timeout, no
    // overlap with a scheduled run, and counted in the probe's runs, failures and success gauge.
    bus_->job_started(r.id);
    bool queued = scheduler_->run_now(job_key(r.probe, r.target), [bus = bus_, id = r.id](const JobOutcome& o) {
      std::string text = o.result.outcome == Outcome::failed ? "failed: " + o.result.reason
                         : o.result.outcome == Outcome::not_applicable ? "nothing to do: " + o.result.reason
                                                                       : "ok";
      for (const auto& f : o.result.metrics.families())
        if (f.name == "fsaudit_canary_last_verdict")
          for (const auto& m : f.metric)
            if (m.gauge.value == 1)
              for (const auto& lp : m.label)
                if (lp.name == "verdict") text = "verdict " + lp.value;
      bus->job_finished(id, o.result.outcome != Outcome::failed, text);
    });
    if (!queued) bus_->job_finished(r.id, false, r.probe + " on " + r.target + " is no longer scheduled (reloaded meanwhile?)");
  }
}

// An operator's request to a probe (scrub start|pause|cancel TARGET): the probe carries it out,
// then runs once so that what fsauditctl reads next already shows the effect.
void Daemon::run_request(const dbus::JobRequest& r) {
  std::shared_ptr<Probe> probe;
  for (const auto& p : probes_)
    if (p->name() == r.kind) probe = p;
  if (!probe) {
    bus_->job_finished(r.id, false, "the " + r.kind + " probe is not running (disabled in the configuration?)");
    return;
  }
  JobSpec spec;
  spec.probe = probe;
  auto own = probe->own_schedule();
  spec.timeout = own ? own->timeout : cfg_.schedule(probe->name()).timeout;
  bus_->job_started(r.id);
  pool_->submit([this, spec, r, bus = bus_] {
    std::stop_source stop;
    ProbeContext ctx = make_context(stop.get_token(), std::chrono::steady_clock::now() + spec.timeout);
    auto done = spec.probe->request(r.action, r.target, ctx);
    // Then one of the scheduler's runs of that probe, so the next read shows the effect and the run
    // is counted like any other; the job ends when that run has published.
    bool ok = done.ok();
    std::string text = done ? *done : done.error();
    if (!scheduler_->run_now(spec.key(), [bus, id = r.id, ok, text](const JobOutcome&) { bus->job_finished(id, ok, text); }))
      bus->job_finished(r.id, ok, text);
  });
}

std::shared_ptr<std::atomic<int>> Daemon::rerun_readers_of_others() {
  std::vector<std::string> keys;
  for (const auto& p : probes_)
    if (p->reads_other_probes() && p->scope() == Scope::host && cfg_.schedule(p->name()).enabled)
    {
      JobSpec j;
      j.probe = p;
      keys.push_back(j.key());
    }
  if (keys.empty()) return nullptr;
  auto left = std::make_shared<std::atomic<int>>(static_cast<int>(keys.size()));
  for (const auto& k : keys)
    if (!scheduler_->run_now(k, [left](const JobOutcome&) { --*left; })) --*left;
  return left;
}

int Daemon::run(bool once) {
  once_ = once;
  if (!start(once)) return 1;
  main_loop(once);
  return stop(once);
}

// Everything before the main loop: the state directory, the lab, /metrics, the pool and the
// scheduler, the first targets, signals and the bus. False when the daemon cannot serve.
bool Daemon::start(bool once) {
  block_signals();
  std::error_code ec;
  std::filesystem::create_directories(cfg_.state_dir, ec);
  if (ec)
    logging::log(spdlog::level::err, "cannot create state directory " + cfg_.state_dir.string() + ": " + ec.message() +
                                         " (state will not survive a restart)");
  // Before the probes exist: the lab adds its canaries to the config they are made from.
  if (!once && cfg_.canary.lab.enabled && ext_.start_lab) lab_ = ext_.start_lab(cfg_);
  if (!once && !start_exposer()) return false;
  publish_build_info();

  pool_ = std::make_unique<ThreadPool>(cfg_.workers);
  publish_run_config();
  scheduler_ = std::make_unique<Scheduler>(
      SystemClock::instance(), *pool_,
      [this](std::stop_token stop, SteadyTime deadline) { return make_context(stop, deadline); },
      [this](const JobOutcome& o) {
        on_outcome(o);
        // Until READY every outcome may complete the first cycle; after it, only a run due again before
        // the loop's planned wake needs it (at 1,000 targets, a futex wake of the main thread per
        // outcome was most of the daemon's context switches). Under the lock: the main loop checks
        // wake_requested() and then sleeps, atomically.
        if (ready_.load(std::memory_order_acquire) && !scheduler_->wake_requested()) return;
        { std::lock_guard g(sig_->mu); }
        sig_->cv.notify_all();
      });
  apply_config();
  refresh_targets(true);

  start_signal_thread(sig_);
  if (!once) start_bus();
  return true;
}

// Ticks the scheduler until a stop signal (or, with --once, the first cycle or two minutes), and
// answers reloads and D-Bus requests between ticks.
void Daemon::main_loop(bool once) {
  LoopClocks clocks;
  clocks.watchdog = systemd::watchdog_interval();
  clocks.last_status = clocks.started = clocks.last_pending_log = std::chrono::steady_clock::now();
  bool ready = false;
  bool helper_fork_logged = false;
  std::shared_ptr<std::atomic<int>> rerun_left;  // --once: second runs still to finish
  while (true) {
    SteadyTime next = scheduler_->tick();
    flush_probe_totals(false);
    if (!helper_fork_logged) {
      if (auto why = helper_exec_failure(); !why.empty()) {
        // They still work; forked, each keeps its own copy of every daemon page written after its fork.
        spdlog::warn("helper processes are forked without exec from now on ({})", why);
        helper_fork_logged = true;
      }
    }
    if (!ready) log_pending_first_runs(clocks);
    if (once && ready && rerun_left && rerun_left->load() == 0) break;
    if (!ready && scheduler_->first_cycle_done()) {
      ready = true;
      ready_.store(true, std::memory_order_release);
      if (once && !(rerun_left = rerun_readers_of_others())) break;
      systemd::notify_ready(status_line());
      spdlog::info("first probe cycle done: {}", status_line());
    }
    if (once && std::chrono::steady_clock::now() - clocks.started > 120s) break;
    auto now = std::chrono::steady_clock::now();
    notify_systemd(clocks, ready, now);
    refresh_targets(false);
    // Wake for the next due job, the watchdog (half its interval) and at least once a second.
    auto wake = std::min<SteadyTime>(next, now + 1s);
    if (clocks.watchdog)
      wake = std::min<SteadyTime>(wake, now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*clocks.watchdog / 2));
    if (!wait_and_answer(wake)) break;
  }
}

// Why READY is late, every 5 s, for whoever waits on `systemctl start`.
void Daemon::log_pending_first_runs(LoopClocks& clocks) {
  if (std::chrono::steady_clock::now() - clocks.last_pending_log <= 5s) return;
  auto pending = scheduler_->first_runs_pending();
  std::string list;
  for (auto& k : pending) {
    const auto [probe, target] = split_job_key(k);
    list += (list.empty() ? "" : ", ") + std::string(probe) + (target.empty() ? "" : " on " + std::string(target));
  }
  if (!pending.empty()) spdlog::info("waiting for the first run of {} job(s): {}", pending.size(), list);
  clocks.last_pending_log = std::chrono::steady_clock::now();
}

// The watchdog ping and, once READY, the status line every 30 s.
void Daemon::notify_systemd(LoopClocks& clocks, bool ready, std::chrono::steady_clock::time_point now) {
  // Ping at half the interval systemd asked for: often enough, and never a flood of datagrams.
  if (clocks.watchdog && now - clocks.last_watchdog >= *clocks.watchdog / 2) {
    systemd::notify_watchdog();
    clocks.last_watchdog = now;
  }
  if (ready && now - clocks.last_status > 30s) {
    systemd::notify_status(status_line());
    clocks.last_status = now;
  }
}

// Sleeps until `wake` or a signal, then answers D-Bus requests and a reload. False on a stop signal.
bool Daemon::wait_and_answer(SteadyTime wake) {
  std::unique_lock l(sig_->mu);
  sig_->cv.wait_until(l, wake, [&] { return sig_->stop || sig_->reload || sig_->control || scheduler_->wake_requested(); });
  if (sig_->stop) return false;
  if (sig_->control) {
    sig_->control = false;
    l.unlock();
    run_control();
    l.lock();
  }
  if (sig_->reload) {
    sig_->reload = false;
    l.unlock();
    // Taken after clearing the flag: a Reload call counted here is answered by this reload; one
    // after it set the flag again and gets the next.
    std::uint64_t asked = bus_ ? bus_->reload_requests() : 0;
    auto verdict = reload();
    if (bus_) bus_->reload_finished(asked, verdict.ok, verdict.message);
  }
  return true;
}

// Cancels the runs, gives them time to clean up, and tears down in dependency order. The exit code.
int Daemon::stop(bool once) {
  flush_probe_totals(true);
  if (once) {
    std::cout << store_->text();
  } else {
    systemd::notify_stopping();
    spdlog::info("stopping: cancelling {} running probe(s)", scheduler_->in_flight());
  }
  scheduler_->cancel_all();
  // Give in-flight runs (commands are killed on cancel) a moment; uninterruptible I/O is left behind.
  // A canary cycle finishes its cleanup (restore, remount) after a stop request: give it time.
  auto deadline = std::chrono::steady_clock::now() + (cfg_.canary.canaries.empty() ? 3s : 100s);
  while (scheduler_->in_flight() > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  bool clean = scheduler_->in_flight() == 0;
  bus_.reset();
  exposer_.reset();
  lab_.reset();  // unmount, destroy and detach exactly what the lab created
  if (!clean) {
    // A thread is stuck in the kernel (e.g. statfs on a dead mount): joining it would hang shutdown.
    logging::log(spdlog::level::warn, "exiting with a probe still stuck in the kernel");
    std::fflush(nullptr);
    ::_exit(0);
  }
  // Workers first: a worker may still be returning from the scheduler's outcome delivery.
  pool_.reset();
  scheduler_.reset();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int check_config(const std::string& path) {
  try {
    require_trusted(path);
    auto cfg = config::load_config_file(path);
    if (!cfg.web_config_file.empty())
      if (auto w = http::load_web_config(cfg.web_config_file); !w) throw std::runtime_error(w.error());
    std::cout << path << ": OK\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}

int run(const Options& opts, const Extensions& ext) {
  tune_allocator();  // before any thread (logging, HTTP, D-Bus, the pool) exists
  std::string path = resolve_config_path(opts.config_path);
  config::Config cfg;
  try {
    cfg = load(path);
  } catch (const std::exception& e) {
    std::cerr << "fsauditd: " << e.what() << "\n";
    return 1;
  }
  logging::init(cfg.log_level);
  spdlog::info("fsauditd {} starting with {}", FSAUDIT_VERSION, path.empty() ? "built-in defaults" : path);
  if (auto a = allocator_info(); a.version.empty())
    spdlog::info("malloc: {} ({})", a.name, a.settings);
  else
    spdlog::info("malloc: {} {} ({})", a.name, a.version, a.settings);
  Daemon d(path, std::move(cfg), ext);
  return d.run(opts.once);
}

}  // namespace fsaudit::app
