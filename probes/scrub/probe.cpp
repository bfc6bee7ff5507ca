#include "probes/scrub/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <limits>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/scrub/parsers.hpp"
#include "probes/scrub/planner.hpp"
#include "probes/scrub/timers.hpp"
#include "probes/bcachefs/scrub_driver.hpp"
#include "probes/btrfs/scrub_driver.hpp"
#include "probes/md/scrub_driver.hpp"
#include "probes/xfs/scrub_driver.hpp"
#include "probes/zfs/scrub_driver.hpp"

namespace fsaudit::scrub {
namespace fs = std::filesystem;


ScrubProbe::ScrubProbe(config::ScrubConfig cfg, TargetSelection selection, std::string privileged_helper,
                       std::shared_ptr<zfs::StatusShare> zpool_share)
    : cfg_(std::move(cfg)), selection_(std::move(selection)), privileged_helper_(std::move(privileged_helper)),
      zpool_share_(std::move(zpool_share)) {
  if (actions_via_helper(privileged_helper_, ::geteuid())) transport_ = socket_transport(privileged_helper_);
}

void ScrubProbe::exclude_canaries(const config::CanaryConfig& canaries) {
  selection_ = config::without_canaries(std::move(selection_), canaries);
  for (const auto& c : canaries.canaries) {
    if (!c.mountpoint.empty()) canary_mounts_.insert(c.mountpoint);
    if (!c.pool.empty()) canary_pools_.insert(c.pool);
  }
}

// Pools and md arrays are not mounts, so `targets.include` (mount point globs) does not select
// them; `targets.exclude` leaves one out by its name ("tank", "md0") or device ("/dev/md0").
bool ScrubProbe::excluded_by_selection(const std::string& name) const {
  for (const auto& g : selection_.exclude)
    if (glob_match(g, name) || glob_match(g, "/dev/" + name)) return true;
  return false;
}

namespace {
// How old the zfs probe's `zpool status` may be to stand for this pass's own: its interval (30 s by
// default) and a jitter. What it says of a scrub's end is zpool's own record, exact at any age.
constexpr auto kSharedStatusMaxAge = std::chrono::seconds(40);
}  // namespace

std::string ScrubProbe::detach_helper(ProbeContext& ctx) const {
  auto it = ctx.tools.find("fsaudit-scrub-detach");
  if (it != ctx.tools.end() && !it->second.empty()) return it->second;
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);  // our own binary, not a host path
  if (!ec) {
    auto sib = self.parent_path() / "fsaudit-scrub-detach";
    if (::access(sib.c_str(), X_OK) == 0) return sib.string();
  }
  return find_tool("fsaudit-scrub-detach");
}

std::vector<ScrubTarget> ScrubProbe::discover(ProbeContext& ctx, std::vector<std::string>& notes,
                                               std::map<std::string, Observation>* discovered, bool shared) {
  std::vector<ScrubTarget> out;
  // md arrays mounted where the selection does not look (a canary's mount point, an excluded one):
  // the exclusion of the mount covers the array under it.
  std::set<std::string> left_out_arrays;
  if (auto mounts = mount_table(ctx)) {  // the cycle's snapshot when the daemon runs this
    if (*mounts != from_mounts_.table) {  // a pure function of the table and the config
      FromMounts fresh{*mounts, {}, {}};
      std::set<std::string> selected_sources;
      for (const auto& t : select_targets(**mounts, selection_)) {
        selected_sources.insert(t.source);
        if ((t.fstype == "btrfs" || t.fstype == "xfs" || t.fstype == "bcachefs") && cfg_.covers(t.fstype))
          fresh.targets.push_back(ScrubTarget{t.name, t.fstype, t.mountpoint, "", "", t.source});
      }
      for (const auto& m : **mounts)
        if (m.source.starts_with("/dev/md") && !selected_sources.count(m.source) &&
            (canary_mounts_.count(m.mountpoint) || excluded_by_selection(m.mountpoint)))
          fresh.left_out_arrays.insert(fs::path(m.source).filename().string());
      from_mounts_ = std::move(fresh);
    }
    out = from_mounts_.targets;
    left_out_arrays = from_mounts_.left_out_arrays;
  } else {
    from_mounts_ = {};
    notes.push_back("mountinfo: " + mounts.error());
  }
  if (cfg_.covers("zfs")) {
    // The zfs probe's `zpool status` when it is recent enough and no action of ours could be missing
    // from it, else our own.
    std::optional<zfs::ZfsStatusReport> recent;
    if (shared && zpool_share_) recent = zpool_share_->recent(ctx.clock.now(), kSharedStatusMaxAge, ctx.tool("zpool"));
    if (recent) add_pools(*recent, out, discovered);
    else discover_pools(ctx, notes, out, discovered);
  }
  if (cfg_.covers("md")) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(ctx.host.sys("block"), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      auto n = it->path().filename().string();
      if (n.rfind("md", 0) != 0 || left_out_arrays.count(n) || excluded_by_selection(n)) continue;
      auto level = read_file(it->path() / "md/level");
      if (!level) continue;
      auto l = std::string(trim(*level));
      if (l.empty() || l == "raid0" || l == "linear" || l == "container" || l == "multipath") continue;
      if (!fs::exists(it->path() / "md/sync_action")) continue;
      out.push_back(ScrubTarget{n, "md", "", "", n, ""});
    }
  }
  return out;
}

void ScrubProbe::add_pools(const zfs::ZfsStatusReport& rep, std::vector<ScrubTarget>& out,
                           std::map<std::string, Observation>* discovered) const {
  for (const auto& pool : rep.pools) {
    if (canary_pools_.count(pool.name) || excluded_by_selection(pool.name)) continue;
    ScrubTarget t{pool.name, "zfs", "", pool.name, "", ""};
    if (pool.complete && discovered) (*discovered)[t.key()] = zfs::observation_from_pool(pool);
    out.push_back(std::move(t));
  }
}

// `zpool status` of every pool names the pools and tells each one's scrub, so the ZFS driver need not
// run `zpool status POOL` per pool after it (one zpool process per pass, not 1 + pools). Output that
// names no pool without saying "no pools available", or does not parse, is asked again as a plain list
// of names: each pool's own observation then says what is wrong. A zpool that timed out is not asked
// again (a second hang would take the rest of the run's time).
void ScrubProbe::discover_pools(ProbeContext& ctx, std::vector<std::string>& notes, std::vector<ScrubTarget>& out,
                                std::map<std::string, Observation>* discovered) {
  CommandSpec spec;
  spec.argv = {ctx.tool("zpool"), "status"};
  // Own key: the zfs probe may run this same command at this moment (both start together in a first
  // cycle and in --once); sharing its key made the zfs probe fail as busy.
  spec.key = "scrub zpool status";
  spec.timeout = std::min<std::chrono::milliseconds>(ctx.remaining(), std::chrono::seconds(10));
  auto r = ctx.runner.run(spec, ctx.stop);
  if (r.ok()) {
    if (auto rep = zfs::parse_zpool_status(r.out); rep && (!rep->pools.empty() || rep->no_pools)) {
      add_pools(*rep, out, discovered);
      return;
    }
  }
  if (r.timed_out || r.busy) {
    notes.push_back("zpool status: " + r.describe());  // a hung zpool: asking again would hang too
    return;
  }
  if (!r.spawn_error.empty()) return;
  spec.argv = {ctx.tool("zpool"), "list", "-H", "-o", "name"};
  spec.key.reset();
  spec.timeout = std::min<std::chrono::milliseconds>(ctx.remaining(), std::chrono::seconds(10));
  auto l = ctx.runner.run(spec, ctx.stop);
  if (l.ok()) {
    for (auto line : lines(l.out)) {
      auto n = trim(line);
      if (!n.empty() && n != "no pools available" && !canary_pools_.count(std::string(n)) &&
          !excluded_by_selection(std::string(n)))
        out.push_back(ScrubTarget{std::string(n), "zfs", "", std::string(n), "", ""});
    }
  } else if (l.spawn_error.empty()) {
    notes.push_back("zpool list: " + l.describe());
  }
}

std::optional<double> ScrubProbe::io_load(ProbeContext& ctx, std::string& source) {
  if (auto p = read_file(ctx.host.proc("pressure/io"))) {
    if (auto v = parse_pressure_some_avg10(*p)) {
      source = "pressure";
      return *v;
    }
  }
  auto d = read_file(ctx.host.proc("diskstats"));
  if (!d) return std::nullopt;
  auto ticks = parse_diskstats_io_ticks(*d);
  double now_ms = std::chrono::duration<double, std::milli>(ctx.clock.now().time_since_epoch()).count();
  std::lock_guard l(mu_);
  auto u = diskstats_utilisation(last_diskstats_, ticks, now_ms - last_diskstats_ms_);
  last_diskstats_ = std::move(ticks);
  last_diskstats_ms_ = now_ms;
  if (u) source = "diskstats";
  return u;
}

// One run's shared view: the clock, the state directory, the drivers' environment, host load.
struct ScrubProbe::Pass {
  ProbeContext& ctx;
  double now;
  long tz;
  fs::path dir;
  DriverEnv env;
  DistroSchedulers distro;
  std::optional<double> load;
  std::string load_source;
  int running = 0;  // scrubs running on the host now (anybody's)
  std::vector<std::string> notes;
  const HelperTransport* transport = nullptr;  // start/pause/resume/cancel through fsaudit-helper
  std::map<std::string, std::string>* saved = nullptr;  // state file -> the text last written there
  std::function<void(const ScrubTarget&)> acting{};  // called as a start, resume, pause or cancel begins and returns
};

ScrubProbe::Pass ScrubProbe::begin_pass(ProbeContext& ctx) {
  const double now = ctx.clock.wall_seconds();
  fs::path dir = ctx.state_dir / "scrub";
  std::error_code ec;
  fs::create_directories(dir, ec);
  Pass pass{ctx, now, tz_offset_ ? *tz_offset_ : CalendarWindow::local_offset(), dir,
            DriverEnv{ctx, dir / "jobs", detach_helper(ctx), privileged_helper_, now}, scan_distro_schedulers(ctx.host.rootfs),
            std::nullopt, "", 0, {}, transport_ ? &transport_ : nullptr, &saved_};
  pass.env.job_group = job_group_;
  pass.env.kernel_threads = &kernel_threads_;
  if (zpool_share_) {
    // An action on a pool makes every status begun before it too old to stand for ours.
    pass.acting = [share = zpool_share_, &clock = ctx.clock](const ScrubTarget& t) {
      if (t.fs == "zfs") share->note_action(clock.now());
    };
  }
  pass.load = io_load(ctx, pass.load_source);
  return pass;
}

namespace {

struct Item {
  ScrubTarget target;
  std::unique_ptr<Driver> driver;
  TargetState state;
  int recorded_job = 0;  // the detached job the state file named before this observation
  Observation obs;
  bool observed = false;
  std::string error;
  Decision decision;
  const config::ScrubPolicy* policy = nullptr;
  std::string timer;
};

std::unique_ptr<Driver> make_driver(const std::string& f) {
  if (f == "zfs") return zfs::make_scrub_driver();
  if (f == "btrfs") return btrfs::make_scrub_driver();
  if (f == "xfs") return xfs::make_scrub_driver();
  if (f == "bcachefs") return bcachefs::make_scrub_driver();
  if (f == "md") return md::make_scrub_driver();
  return nullptr;
}

// Reads the remembered state and asks the driver what the target is doing now.
Item observe_target(const ScrubTarget& t, const config::ScrubConfig& cfg, ScrubProbe::Pass& pass) {
  Item it;
  it.target = t;
  it.driver = make_driver(t.fs);
  if (pass.transport) it.driver = route_through_helper(std::move(it.driver), *pass.transport);
  it.policy = &cfg.policy_for(t.name);
  it.timer = scheduler_for(pass.distro, t.fs, t.fs == "zfs" ? t.pool : t.name);
  if (auto s = read_file(pass.dir / (t.key() + ".state"))) it.state = TargetState::parse(*s);
  it.recorded_job = it.state.job_pid;
  auto o = it.driver->observe(t, it.state, pass.env);
  if (!o) {
    it.error = o.error();
    if (it.state.first_seen <= 0) it.state.first_seen = pass.now;
    return it;
  }
  it.obs = *o;
  it.observed = true;
  if (absorb(it.state, it.obs, pass.now)) {
    it.state.job_dir.clear();
    it.state.job_pid = 0;
  }
  if (it.obs.phase == Phase::running) ++pass.running;
  return it;
}

// An action on a target is noted when it begins and when it returns: a status begun in between may
// not show it yet.
struct ActingNote {
  ScrubProbe::Pass& pass;
  const ScrubTarget& target;
  ActingNote(ScrubProbe::Pass& p, const ScrubTarget& t) : pass(p), target(t) { note(); }
  ~ActingNote() { note(); }
  ActingNote(const ActingNote&) = delete;
  ActingNote& operator=(const ActingNote&) = delete;
  void note() {
    if (pass.acting) pass.acting(target);
  }
};

// Carries out the planner's decision; returns the driver's error, if any.
Result<void> act(Item& it, ScrubProbe::Pass& pass) {
  auto& st = it.state;
  const Action a = it.decision.action;
  std::optional<ActingNote> noted;
  if (a != Action::none) noted.emplace(pass, it.target);
  if (a == Action::start || a == Action::resume) {
    st.last_attempt = pass.now;
    auto r = a == Action::start ? it.driver->start(it.target, st, pass.env) : it.driver->resume(it.target, st, pass.env);
    if (!r) {
      st.last_attempt_error = r.error();
      // A tool the host lacks does not appear by retrying: the target is unsupported, not failing.
      if (r.kind() == ErrorKind::not_installed) {
        st.unsupported_reason = r.error();
        st.unsupported_since = pass.now;
      }
      return r;
    }
    st.last_attempt_error.clear();
    if (a == Action::start) {
      st.running = true;
      st.by_us = true;
      st.run_start = pass.now;
      st.run_bytes.reset();
    }
    st.paused_by_us = false;
    ++pass.running;
    return {};
  }
  if (a == Action::pause) {
    if (it.driver->pause(it.target, st, pass.env)) {
      st.paused_by_us = true;
      --pass.running;
      return {};
    }
    // Cannot pause: cancel instead.
  }
  if (a == Action::pause || a == Action::cancel) {
    auto c = it.driver->cancel(it.target, st, pass.env);
    if (!c) return c;
    st.paused_by_us = false;
    --pass.running;
  }
  return {};
}

// Plans every observed target, most overdue first, so the concurrency slot goes to the target that
// waited longest.
void plan_and_act(std::vector<Item>& items, const config::ScrubConfig& cfg, ScrubProbe::Pass& pass) {
  std::vector<Item*> order;
  for (auto& it : items) order.push_back(&it);
  std::stable_sort(order.begin(), order.end(), [](Item* a, Item* b) {
    return due_time(*a->policy, a->state, a->target.key()) < due_time(*b->policy, b->state, b->target.key());
  });
  for (Item* it : order) {
    if (!it->observed) {
      it->decision.code = "observe_failed";
      it->decision.reason = it->error;
      continue;
    }
    PlanInput in;
    in.policy = it->policy;
    in.key = it->target.key();
    in.now = pass.now;
    in.tz_offset = pass.tz;
    in.io_load = pass.load;
    in.running_on_host = pass.running;
    in.max_concurrent = cfg.max_concurrent;
    in.timer = it->timer;
    in.can_pause = it->driver->can_pause(it->state);
    it->decision = plan(in, it->state, it->obs);
    if (auto r = act(*it, pass); !r) {
      it->decision.failed = true;
      it->decision.reason += " (failed: " + r.error() + ")";
    }
  }
}

void last_run_metrics(metrics::Batch& b, const Item& it, const metrics::Labels& l) {
  const auto& last = it.state.last;
  b.gauge("fsaudit_scrub_last_end_timestamp_seconds", "End of the last scrub that ended (finished or canceled).", l, last.end);
  b.gauge("fsaudit_scrub_last_duration_seconds", "Duration of the last scrub that ended.", l, last.duration);
  if (last.bytes) b.gauge("fsaudit_scrub_last_scrubbed_bytes", "Bytes the last scrub read and verified.", l, *last.bytes);
  if (last.rate) b.gauge("fsaudit_scrub_last_rate_bytes_per_second", "Average rate of the last scrub.", l, *last.rate);
  if (last.repaired_bytes)
    b.gauge("fsaudit_scrub_last_repaired_bytes", "Bytes the last scrub repaired (ZFS reports bytes, not counts).", l,
            *last.repaired_bytes);
  auto errors = [&](const char* name, const char* help, metrics::Labels base, const Errors& e) {
    for (const auto& [kind, v] : {std::pair{"found", e.found}, {"repaired", e.repaired}, {"uncorrectable", e.uncorrectable}}) {
      if (!v) continue;
      auto lk = base;
      lk["kind"] = kind;
      b.gauge(name, help, lk, static_cast<double>(*v));
    }
  };
  errors("fsaudit_scrub_last_errors",
         "Errors the last scrub reported: found, repaired, uncorrectable (absent when the tool does not say).", l, last.errors);
  for (const auto& [cause, n] : last.error_detail.causes) {
    auto lc = l;
    lc["cause"] = cause;
    b.gauge("fsaudit_scrub_last_error_causes",
            "Errors the last scrub found, by cause (btrfs: read, csum, verify, super), from the scrub's own report.", lc,
            static_cast<double>(n));
  }
  for (const auto& [dev, e] : last.error_detail.devices) {
    auto ld = l;
    ld["device"] = dev;
    errors("fsaudit_scrub_last_device_errors",
           "Errors the last scrub reported per member device (kernel name): found, repaired, uncorrectable.", ld, e);
  }
  b.info("fsaudit_scrub_last_result_info", "How the last scrub ended (ok, errors, canceled, failed) and who started it.",
         {{"target", it.target.name}, {"fs", it.target.fs}, {"result", last.result},
          {"started_by", last.by_us ? "fsaudit" : "other"}});
}

// The page's view of the target: its filesystem is named by mount point, pool or md device.
void status_facts(metrics::Batch& b, const Item& it, double now, bool running, bool paused) {
  const auto& st = it.state;
  metrics::FsFacts f;
  if (it.target.fs == "zfs") f.pool = it.target.name;
  else if (it.target.fs == "md") f.device = it.target.name;
  else f.target = it.target.name;
  f.fs = it.target.fs;
  metrics::ScrubFacts s;
  s.running = running;
  s.paused = paused;
  if (st.running && it.obs.progress) s.progress_ratio = *it.obs.progress;
  if (st.last_completed_end > 0) s.age_seconds = std::max(0.0, now - st.last_completed_end);
  else if (it.observed && it.obs.supported) s.age_seconds = std::numeric_limits<double>::infinity();
  const auto& e = st.last.errors;
  if (st.last.end > 0) {
    for (const auto& [kind, v] : {std::pair{"found", e.found}, {"repaired", e.repaired}, {"uncorrectable", e.uncorrectable}})
      if (v && *v > 0) s.errors[kind] = static_cast<double>(*v);
    s.last_result = st.last.result;
  }
  s.mode = mode_name(it.decision.mode);
  s.decision = it.decision.code;
  if (st.last.end > 0 && e.uncorrectable && *e.uncorrectable > 0)
    f.problems.push_back({metrics::Severity::critical,
                          "the last scrub found " + std::to_string(*e.uncorrectable) + " uncorrectable error(s): data is lost",
                          "FsauditScrubUncorrectableErrors"});
  else if (st.last.end > 0 && e.found && *e.found > 0)
    f.problems.push_back({metrics::Severity::warning, "the last scrub found " + std::to_string(*e.found) + " error(s)",
                          "FsauditScrubFoundErrors"});
  f.scrub = std::move(s);
  b.status.filesystems.push_back(std::move(f));
}

void target_metrics(metrics::Batch& b, const Item& it, double now) {
  const auto& st = it.state;
  metrics::Labels l{{"target", it.target.name}, {"fs", it.target.fs}};
  // Only while it cannot be read (0): an idle target carries no series that can only say 1 (issue 33).
  if (!it.observed)
    b.gauge("fsaudit_scrub_observe_success",
            "0 while the scrub state of the target cannot be read (the probe's reason says why); absent when it can.", l, 0);
  bool run_now = it.observed && it.obs.phase == Phase::running;
  bool started_now = it.decision.action == Action::start || it.decision.action == Action::resume;
  b.gauge("fsaudit_scrub_running", "1 while a scrub (fsaudit's or anybody's) runs on the target.", l,
          (run_now || (started_now && !it.decision.failed)) ? 1 : 0);
  const bool paused = st.running && !run_now && !started_now;
  // Only while a scrub is in progress (running or paused), as its progress: an idle target carries
  // no series that can only say 0 (issue 33's series budget).
  if (st.running || run_now || started_now)
    b.gauge("fsaudit_scrub_paused",
            "1 while the scrub in progress on the target is paused (by fsaudit at its window's end, or by others), 0 "
            "while it runs; absent when no scrub is in progress.",
            l, paused ? 1 : 0);
  if (st.running && it.obs.progress)
    b.gauge("fsaudit_scrub_progress_ratio", "Progress of the running or paused scrub, 0..1.", l, *it.obs.progress);
  double last_start = st.running ? st.run_start : st.last.start;
  if (last_start > 0)
    b.gauge("fsaudit_scrub_last_start_timestamp_seconds", "Start of the running scrub, else of the last one.", l, last_start);
  if (st.last.end > 0) last_run_metrics(b, it, l);
  const char* age_help = "Seconds since the last completed scrub (+Inf if never): alert when above the interval.";
  if (st.last_completed_end > 0) {
    b.gauge("fsaudit_scrub_last_completed_timestamp_seconds", "End of the last scrub that ran to completion.", l,
            st.last_completed_end);
    b.gauge("fsaudit_scrub_last_completed_age_seconds", age_help, l, std::max(0.0, now - st.last_completed_end));
  } else if (it.observed && it.obs.supported) {
    b.gauge("fsaudit_scrub_last_completed_age_seconds", age_help, l, std::numeric_limits<double>::infinity());
  }
  // FsauditScrubOverdue reads it: a target never scrubbed is overdue only once its first start is past.
  if (it.decision.next_due)
    b.gauge("fsaudit_scrub_next_scheduled_timestamp_seconds",
            "When fsaudit will start the next scrub (earliest; in the window, subject to load and concurrency).", l,
            *it.decision.next_due);
  // How the target is scrubbed and what was decided, in one series (issue 33's series budget).
  b.info("fsaudit_scrub_decision_info",
         "How the target is scrubbed (mode: scheduled by fsaudit, observed-timer when a distro timer or cron job does "
         "it, observe_only, unsupported; timer names that job) and what the scheduler decided on its last run (code).",
         {{"target", it.target.name}, {"fs", it.target.fs}, {"mode", mode_name(it.decision.mode)},
          {"timer", it.decision.mode == Mode::observed_timer ? it.timer : ""}, {"code", it.decision.code}});
  status_facts(b, it, now, run_now || started_now, paused);
  // One series per result seen, not four from the start: most targets only ever see "ok". A result's
  // series appears at its first run (1), which increase() over a window that holds its start misses:
  // the last run's own result is fsaudit_scrub_last_result_info.
  for (const char* res : {"ok", "errors", "canceled", "failed"}) {
    auto f = st.runs.find(res);
    if (f == st.runs.end() || f->second == 0) continue;
    auto l4 = l;
    l4["result"] = res;
    b.counter("fsaudit_scrub_runs_total", "Scrubs seen ending on the target, by result (fsaudit's and others'); a "
              "result's series appears at its first run.", l4, static_cast<double>(f->second));
  }
}

// Written only when it changed: a state file rewritten (and fsynced) every pass for every target
// would be fsaudit's own steady write load on the state directory's filesystem.
void save_state(const Item& it, ScrubProbe::Pass& pass) {
  const fs::path path = pass.dir / (it.target.key() + ".state");
  std::string text = it.state.serialize();
  std::error_code ec;
  if (pass.saved) {
    auto f = pass.saved->find(path.string());
    if (f != pass.saved->end() && f->second == text && fs::exists(path, ec)) return;
  }
  if (auto w = write_file_atomic(path, text); !w) {
    pass.notes.push_back("cannot save scrub state: " + w.error());
    if (pass.saved) pass.saved->erase(path.string());
    return;
  }
  if (pass.saved) (*pass.saved)[path.string()] = std::move(text);
}

}  // namespace

ProbeResult ScrubProbe::run(const Target&, ProbeContext& ctx) {
  if (!cfg_.enabled) return ProbeResult::not_applicable("scrub.enabled is false");
  std::lock_guard serial(run_mu_);  // one pass at a time over the state files (scheduled or requested)
  std::vector<std::string> notes;
  std::map<std::string, Observation> discovered;
  auto targets = discover(ctx, notes, &discovered, /*shared=*/true);
  if (targets.empty()) {
    std::string why = "no scrub-capable targets (ZFS pools, btrfs/xfs/bcachefs mounts, md arrays)";
    for (const auto& n : notes) why += "; " + n;
    return ProbeResult::not_applicable(why);
  }
  Pass pass = begin_pass(ctx);
  pass.env.discovered = std::move(discovered);
  std::vector<Item> items;
  for (const auto& t : targets) items.push_back(observe_target(t, cfg_, pass));
  plan_and_act(items, cfg_, pass);

  metrics::Batch b;
  int failed = 0;
  for (const auto& it : items) {
    save_state(it, pass);
    target_metrics(b, it, pass.now);
    if (!it.observed) ++failed;
  }
  b.gauge("fsaudit_scrubs_running", "Scrubs running on this host now.", {}, pass.running);
  if (pass.load)
    b.gauge("fsaudit_scrub_host_io_load_percent",
            "Host I/O load the scheduler compares with io_load_threshold (PSI some avg10, else busiest disk).",
            {{"source", pass.load_source}}, *pass.load);
  if (failed == static_cast<int>(items.size())) {
    std::string why = "could not read the scrub state of any target";
    for (const auto& it : items) why += "; " + it.target.name + ": " + it.error;
    return ProbeResult::failed(why, std::move(b));
  }
  return ProbeResult::ok(std::move(b));
}

Result<std::string> ScrubProbe::request(const std::string& action, const std::string& target, ProbeContext& ctx) {
  // fsauditctl's Scrub(ss) is root's (the D-Bus policy): the operator's call.
  auto done = carry_out_request(action, target, ctx, /*operator_request=*/true);
  if (!done.ok) return err(done.text, done.kind);
  return done.text;
}

ScrubProbe::RequestDone ScrubProbe::carry_out_request(const std::string& action, const std::string& target,
                                                      ProbeContext& ctx, bool operator_request, int job) {
  RequestDone out;
  auto fail = [&](std::string why) {
    out.text = std::move(why);
    return out;
  };
  if (action != "start" && action != "pause" && action != "cancel")
    return fail("scrub action must be start, pause or cancel, not '" + action + "'");
  if (!cfg_.enabled) return fail("scrub.enabled is false in the configuration");
  std::lock_guard serial(run_mu_);
  std::vector<std::string> notes;
  std::map<std::string, Observation> discovered;
  auto targets = discover(ctx, notes, &discovered);
  auto t = std::find_if(targets.begin(), targets.end(), [&](const ScrubTarget& x) { return x.name == target; });
  if (t == targets.end()) return fail(unknown_target_message(target, targets));
  Pass pass = begin_pass(ctx);
  pass.env.discovered = std::move(discovered);
  Item it = observe_target(*t, cfg_, pass);
  // A job named by the caller must be the one this state recorded: never signal another process.
  if (job > 0 && job != it.recorded_job)
    return fail("job " + std::to_string(job) + " is not a scrub job started here for " + target + " (recorded: " +
                (it.recorded_job > 0 ? std::to_string(it.recorded_job) : std::string("none")) + ")");
  // Anybody but an operator names the job it stops: the one fsaudit started, not just the target.
  if (!operator_request && action != "start" && it.recorded_job > 0 && job != it.recorded_job)
    return fail(action + " of " + target + " names no job: the scrub job started here is " +
                std::to_string(it.recorded_job) + ", and only that job is paused or canceled");
  out.pause_unsupported = it.state.pause_unsupported;
  if (!it.observed) return fail("cannot read the scrub state of " + target + ": " + it.error);
  if (!it.obs.supported) return fail(target + " cannot be scrubbed here: " + it.obs.unsupported_reason);
  if (auto allowed = request_allowed(*it.policy, action, target, it.state, it.obs, operator_request); !allowed) {
    out.kind = allowed.kind();
    return fail(allowed.error());
  }
  auto done = carry_out(action, it.target, *it.driver, it.state, it.obs, pass);
  // A stop that took effect at once (md idle, zpool scrub -s) ends the run now: left "running" in
  // the state, the next scrub somebody else starts there would pass for fsaudit's.
  if (done && action != "start") {
    if (auto o = it.driver->observe(it.target, it.state, pass.env); o && absorb(it.state, *o, pass.now)) {
      it.state.job_dir.clear();
      it.state.job_pid = 0;
    }
  }
  save_state(it, pass);
  out.pause_unsupported = it.state.pause_unsupported;
  out.job_pid = it.state.job_pid;
  out.job_dir = it.state.job_dir;
  if (!done) {
    out.kind = done.kind();
    return fail(done.error());
  }
  out.ok = true;
  out.text = *done;
  return out;
}

Result<std::string> ScrubProbe::carry_out(const std::string& action, const ScrubTarget& t, Driver& driver, TargetState& st,
                                          const Observation& obs, Pass& pass) {
  const bool running = obs.phase == Phase::running;
  const bool paused = st.running && !running;  // ours paused, or paused by its tool
  ActingNote noted(pass, t);
  if (action == "start") {
    if (running) return err("a scrub is already running on " + t.name);
    auto r = paused ? driver.resume(t, st, pass.env) : driver.start(t, st, pass.env);
    if (!r) return err_in("", r);
    if (!paused) {
      st.running = true;
      st.run_start = pass.now;
      st.run_bytes.reset();
    }
    st.by_us = st.by_operator = true;
    st.paused_by_us = false;
    st.last_attempt = pass.now;
    st.last_attempt_error.clear();
    return std::string(paused ? "resumed" : "started") + " the scrub of " + t.name;
  }
  if (!running) return err("no scrub is running on " + t.name + (paused ? " (it is paused)" : ""));
  if (action == "pause") {
    // Tools that cannot pause (md) stop instead; btrfs' cancel keeps the position for a resume.
    auto r = driver.can_pause(st) ? driver.pause(t, st, pass.env) : driver.cancel(t, st, pass.env);
    if (!r) return err_in("", r);
    st.paused_by_us = st.by_operator = true;
    return "paused the scrub of " + t.name;
  }
  auto r = driver.cancel(t, st, pass.env);
  if (!r) return err_in("", r);
  st.paused_by_us = false;
  st.by_operator = true;
  return "canceled the scrub of " + t.name;
}

std::string ScrubProbe::unknown_target_message(const std::string& target, const std::vector<ScrubTarget>& targets) {
  std::string names;
  for (const auto& x : targets) names += (names.empty() ? "" : ", ") + x.name;
  return "no scrub target named '" + target + "'; scrub targets: " + (names.empty() ? "(none)" : names);
}

std::unique_ptr<Probe> make_scrub_probe(const config::Config& cfg, std::shared_ptr<zfs::StatusShare> zpool_share) {
  auto p = std::make_unique<ScrubProbe>(cfg.scrub, cfg.targets, cfg.canary.helper, std::move(zpool_share));
  p->exclude_canaries(cfg.canary);
  return p;
}

}  // namespace fsaudit::scrub
