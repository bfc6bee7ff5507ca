#include "probes/scrub/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/scrub/parsers.hpp"
#include "probes/scrub/planner.hpp"
#include "probes/scrub/timers.hpp"

namespace fsaudit::scrub {
namespace fs = std::filesystem;

namespace {

struct Item {
  ScrubTarget target;
  std::unique_ptr<Driver> driver;
  TargetState state;
  Observation obs;
  bool observed = false;
  std::string error;
  Decision decision;
  const config::ScrubPolicy* policy = nullptr;
  std::string timer;
};

bool mentions_missing_tool(const std::string& e) {
  return e.find("not found") != std::string::npos || e.find("not installed") != std::string::npos;
}

}  // namespace

ScrubProbe::ScrubProbe(config::ScrubConfig cfg, TargetSelection selection)
    : cfg_(std::move(cfg)), selection_(std::move(selection)) {}

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

std::vector<ScrubTarget> ScrubProbe::discover(ProbeContext& ctx, std::vector<std::string>& notes) {
  std::vector<ScrubTarget> out;
  if (auto mounts = mount_table(ctx)) {  // the cycle's snapshot when the daemon runs this
    for (const auto& t : select_targets(**mounts, selection_)) {
      if ((t.fstype == "btrfs" || t.fstype == "xfs" || t.fstype == "bcachefs") && cfg_.covers(t.fstype))
        out.push_back(ScrubTarget{t.name, t.fstype, t.mountpoint, "", "", t.source});
    }
  } else {
    notes.push_back("mountinfo: " + mounts.error());
  }
  if (cfg_.covers("zfs")) {
    CommandSpec spec;
    spec.argv = {ctx.tool("zpool"), "list", "-H", "-o", "name"};
    spec.timeout = std::min<std::chrono::milliseconds>(ctx.remaining(), std::chrono::seconds(10));
    auto r = ctx.runner.run(spec, ctx.stop);
    if (r.ok()) {
      for (auto line : lines(r.out)) {
        auto n = trim(line);
        if (!n.empty() && n != "no pools available") out.push_back(ScrubTarget{std::string(n), "zfs", "", std::string(n), "", ""});
      }
    } else if (r.spawn_error.empty()) {
      notes.push_back("zpool list: " + r.describe());
    }
  }
  if (cfg_.covers("md")) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(ctx.host.sys("block"), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      auto n = it->path().filename().string();
      if (n.rfind("md", 0) != 0) continue;
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

ProbeResult ScrubProbe::run(const Target&, ProbeContext& ctx) {
  if (!cfg_.enabled) return ProbeResult::not_applicable("scrub.enabled is false");
  std::vector<std::string> notes;
  auto targets = discover(ctx, notes);
  if (targets.empty()) {
    std::string why = "no scrub-capable targets (ZFS pools, btrfs/xfs/bcachefs mounts, md arrays)";
    for (const auto& n : notes) why += "; " + n;
    return ProbeResult::not_applicable(why);
  }
  const double now = ctx.clock.wall_seconds();
  const long tz = tz_offset_ ? *tz_offset_ : CalendarWindow::local_offset();
  fs::path dir = ctx.state_dir / "scrub";
  std::error_code ec;
  fs::create_directories(dir, ec);
  DriverEnv env{ctx, dir / "jobs", detach_helper(ctx), now};
  auto distro = scan_distro_schedulers(ctx.host.rootfs);
  std::string load_source;
  auto load = io_load(ctx, load_source);

  std::vector<Item> items;
  int running = 0;
  for (auto& t : targets) {
    Item it;
    it.target = t;
    it.driver = make_driver(t.fs);
    it.policy = &cfg_.policy_for(t.name);
    it.timer = scheduler_for(distro, t.fs, t.fs == "zfs" ? t.pool : t.name);
    if (auto s = read_file(dir / (t.key() + ".state"))) it.state = TargetState::parse(*s);
    auto o = it.driver->observe(t, it.state, env);
    if (o) {
      it.obs = *o;
      it.observed = true;
      if (!it.obs.supported && it.state.unsupported_reason.empty()) {
        // Keep the reason for metrics; JobDrivers learn it from a failed run.
      }
      if (absorb(it.state, it.obs, now)) {
        it.state.job_dir.clear();
        it.state.job_pid = 0;
      }
      if (it.obs.phase == Phase::running) ++running;
    } else {
      it.error = o.error();
      if (it.state.first_seen <= 0) it.state.first_seen = now;
    }
    items.push_back(std::move(it));
  }

  // Most overdue first, so the concurrency slot goes to the target that waited longest.
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
    in.now = now;
    in.tz_offset = tz;
    in.io_load = load;
    in.running_on_host = running;
    in.max_concurrent = cfg_.max_concurrent;
    in.timer = it->timer;
    in.can_pause = it->driver->can_pause(it->state);
    it->decision = plan(in, it->state, it->obs);
    auto& st = it->state;
    Result<void> r;
    switch (it->decision.action) {
      case Action::none: break;
      case Action::start:
      case Action::resume: {
        st.last_attempt = now;
        r = it->decision.action == Action::start ? it->driver->start(it->target, st, env)
                                                 : it->driver->resume(it->target, st, env);
        if (r) {
          st.last_attempt_error.clear();
          if (it->decision.action == Action::start) {
            st.running = true;
            st.by_us = true;
            st.run_start = now;
            st.run_bytes.reset();
          }
          st.paused_by_us = false;
          ++running;
        } else {
          st.last_attempt_error = r.error();
          if (mentions_missing_tool(r.error()) && r.error().find("fsaudit-scrub-detach") == std::string::npos) {
            st.unsupported_reason = r.error();
            st.unsupported_since = now;
          }
        }
        break;
      }
      case Action::pause:
        r = it->driver->pause(it->target, st, env);
        if (r) {
          st.paused_by_us = true;
          --running;
          break;
        }
        [[fallthrough]];  // cannot pause: cancel instead
      case Action::cancel: {
        auto c = it->driver->cancel(it->target, st, env);
        if (!c) r = c;
        else {
          st.paused_by_us = false;
          r = {};
          --running;
        }
        break;
      }
    }
    if (!r) it->decision.reason += " (failed: " + r.error() + ")";
  }

  metrics::Batch b;
  int failed = 0;
  for (auto& it : items) {
    auto& st = it.state;
    if (auto w = write_file_atomic(dir / (it.target.key() + ".state"), st.serialize()); !w) {
      notes.push_back("cannot save scrub state: " + w.error());
    }
    metrics::Labels l{{"target", it.target.name}, {"fs", it.target.fs}};
    b.gauge("fsaudit_scrub_observe_success", "1 if the scrub state of the target could be read on the last run.", l,
            it.observed ? 1 : 0);
    if (!it.observed) ++failed;
    bool run_now = it.observed && it.obs.phase == Phase::running;
    bool started_now = it.decision.action == Action::start || it.decision.action == Action::resume;
    b.gauge("fsaudit_scrub_running", "1 while a scrub (fsaudit's or anybody's) runs on the target.", l,
            (run_now || (started_now && it.decision.reason.find("(failed") == std::string::npos)) ? 1 : 0);
    b.gauge("fsaudit_scrub_paused", "1 while a scrub on the target is paused (by fsaudit at its window's end, or by others).",
            l, (st.running && !run_now && !started_now) ? 1 : 0);
    if (st.running && it.obs.progress)
      b.gauge("fsaudit_scrub_progress_ratio", "Progress of the running or paused scrub, 0..1.", l, *it.obs.progress);
    double last_start = st.running ? st.run_start : st.last.start;
    if (last_start > 0)
      b.gauge("fsaudit_scrub_last_start_timestamp_seconds", "Start of the running scrub, else of the last one.", l, last_start);
    if (st.last.end > 0) {
      b.gauge("fsaudit_scrub_last_end_timestamp_seconds", "End of the last scrub that ended (finished or canceled).", l,
              st.last.end);
      b.gauge("fsaudit_scrub_last_duration_seconds", "Duration of the last scrub that ended.", l, st.last.duration);
      if (st.last.bytes)
        b.gauge("fsaudit_scrub_last_scrubbed_bytes", "Bytes the last scrub read and verified.", l, *st.last.bytes);
      if (st.last.rate)
        b.gauge("fsaudit_scrub_last_rate_bytes_per_second", "Average rate of the last scrub.", l, *st.last.rate);
      if (st.last.repaired_bytes)
        b.gauge("fsaudit_scrub_last_repaired_bytes", "Bytes the last scrub repaired (ZFS reports bytes, not counts).", l,
                *st.last.repaired_bytes);
      auto err_metric = [&](const char* kind, const std::optional<std::uint64_t>& v) {
        if (!v) return;
        auto l2 = l;
        l2["kind"] = kind;
        b.gauge("fsaudit_scrub_last_errors",
                "Errors the last scrub reported: found, repaired, uncorrectable (absent when the tool does not say).", l2,
                static_cast<double>(*v));
      };
      err_metric("found", st.last.errors.found);
      err_metric("repaired", st.last.errors.repaired);
      err_metric("uncorrectable", st.last.errors.uncorrectable);
      auto l3 = l;
      l3["result"] = st.last.result;
      b.info("fsaudit_scrub_last_result_info", "How the last scrub ended (ok, errors, canceled, failed) and who started it.",
             {{"target", it.target.name}, {"fs", it.target.fs}, {"result", st.last.result},
              {"started_by", st.last.by_us ? "fsaudit" : "other"}});
    }
    if (st.last_completed_end > 0) {
      b.gauge("fsaudit_scrub_last_completed_timestamp_seconds", "End of the last scrub that ran to completion.", l,
              st.last_completed_end);
      b.gauge("fsaudit_scrub_last_completed_age_seconds",
              "Seconds since the last completed scrub (+Inf if never): alert when above the interval.", l,
              std::max(0.0, now - st.last_completed_end));
    } else if (it.observed && it.obs.supported) {
      b.gauge("fsaudit_scrub_last_completed_age_seconds",
              "Seconds since the last completed scrub (+Inf if never): alert when above the interval.", l,
              std::numeric_limits<double>::infinity());
    }
    if (it.decision.next_due)
      b.gauge("fsaudit_scrub_next_scheduled_timestamp_seconds",
              "When fsaudit will start the next scrub (earliest; in the window, subject to load and concurrency).", l,
              *it.decision.next_due);
    b.info("fsaudit_scrub_mode_info",
           "How the target is scrubbed: scheduled (by fsaudit), observed-timer (a distro timer/cron job does it), "
           "observe_only, unsupported.",
           {{"target", it.target.name}, {"fs", it.target.fs}, {"mode", mode_name(it.decision.mode)},
            {"timer", it.decision.mode == Mode::observed_timer ? it.timer : ""}});
    b.info("fsaudit_scrub_decision_info", "What the scheduler decided on its last run, and why (code is bounded).",
           {{"target", it.target.name}, {"fs", it.target.fs}, {"code", it.decision.code}});
    for (const char* res : {"ok", "errors", "canceled", "failed"}) {
      auto f = st.runs.find(res);
      auto l4 = l;
      l4["result"] = res;
      b.counter("fsaudit_scrub_runs_total", "Scrubs seen ending on the target, by result (fsaudit's and others').", l4,
                f == st.runs.end() ? 0 : static_cast<double>(f->second));
    }
  }
  b.gauge("fsaudit_scrubs_running", "Scrubs running on this host now.", {}, running);
  if (load)
    b.gauge("fsaudit_scrub_host_io_load_percent",
            "Host I/O load the scheduler compares with io_load_threshold (PSI some avg10, else busiest disk).",
            {{"source", load_source}}, *load);
  if (failed == static_cast<int>(items.size())) {
    std::string why = "could not read the scrub state of any target";
    for (const auto& it : items) why += "; " + it.target.name + ": " + it.error;
    return ProbeResult::failed(why, std::move(b));
  }
  return ProbeResult::ok(std::move(b));
}

std::unique_ptr<Probe> make_scrub_probe(const config::Config& cfg) {
  return std::make_unique<ScrubProbe>(cfg.scrub, cfg.targets);
}

}  // namespace fsaudit::scrub
