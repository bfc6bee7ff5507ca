// Scrub scheduling with a fake clock: windows (crossing midnight), interval, spread, load threshold,
// concurrency limit, window end (pause/cancel/continue), restart mid-scrub, observed runs, config.
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "daemon/core/clock.hpp"
#include "probes/scrub/planner.hpp"

namespace fsaudit::scrub {
namespace {

using namespace std::chrono_literals;
constexpr double kDay = 86400;
// Saturday 2023-11-18 00:00:00 UTC.
constexpr double kSat = 1700265600;

config::ScrubPolicy policy(const std::string& window = "*", double spread = 0) {
  config::ScrubPolicy p;
  p.window = *CalendarWindow::parse(window);
  p.spread = spread;
  p.interval = std::chrono::hours(24 * 7);
  return p;
}

struct Sim {
  config::ScrubPolicy pol;
  TargetState st;
  Observation obs;
  PlanInput in;
  FakeClock clock{WallTime(std::chrono::seconds(static_cast<long long>(kSat) - 3600))};  // FakeClock starts 1 h in
  explicit Sim(config::ScrubPolicy p) : pol(std::move(p)) {
    in.policy = &pol;
    in.key = "btrfs_/srv";
    in.max_concurrent = 1;
  }
  double now() const { return clock.wall_seconds(); }
  Decision decide() {
    in.now = now();
    absorb(st, obs, in.now);
    return plan(in, st, obs);
  }
  // Applies a start as the probe does.
  void started() {
    st.running = true;
    st.by_us = true;
    st.run_start = now();
    obs.phase = Phase::running;
  }
  void advance_to(double t) { clock.advance(std::chrono::milliseconds(static_cast<long long>((t - now()) * 1000))); }
};

TEST(ScrubPlanner, NeverScrubbedTargetStartsWhenAllowed) {
  Sim s(policy());
  auto d = s.decide();
  EXPECT_EQ(d.action, Action::start) << d.reason;
  EXPECT_EQ(d.mode, Mode::scheduled);
}

TEST(ScrubPlanner, WindowCrossingMidnight) {
  Sim s(policy("Sat 22:00-03:00"));
  s.st.first_seen = kSat - 10 * kDay;  // long overdue
  s.advance_to(kSat + 12 * 3600);      // Sat 12:00: outside
  auto d = s.decide();
  EXPECT_EQ(d.action, Action::none);
  EXPECT_EQ(d.code, "outside_window");
  ASSERT_TRUE(d.next_due);
  EXPECT_DOUBLE_EQ(*d.next_due, kSat + 22 * 3600);
  s.advance_to(kSat + 23.5 * 3600);  // Sat 23:30: inside
  EXPECT_EQ(s.decide().action, Action::start);
  s.advance_to(kSat + kDay + 2 * 3600 + 59 * 60);  // Sun 02:59: still inside (started on Saturday)
  EXPECT_EQ(s.decide().action, Action::start);
  s.advance_to(kSat + kDay + 3 * 3600 + 60);  // Sun 03:01: outside
  EXPECT_EQ(s.decide().code, "outside_window");
  // Friday 23:00 is not a window day.
  s.advance_to(kSat + 6 * kDay + 23 * 3600);
  EXPECT_EQ(s.decide().code, "outside_window");
}

TEST(ScrubPlanner, IntervalCountsFromLastCompletedScrub) {
  Sim s(policy());
  s.st.first_seen = kSat - 30 * kDay;
  s.st.last_completed_end = kSat - 7 * kDay + 3600;  // due in one hour
  s.st.last.end = s.st.last_completed_end;
  auto d = s.decide();
  EXPECT_EQ(d.code, "not_due");
  ASSERT_TRUE(d.next_due);
  EXPECT_DOUBLE_EQ(*d.next_due, kSat + 3600);
  s.advance_to(kSat + 3599);
  EXPECT_EQ(s.decide().code, "not_due");
  s.advance_to(kSat + 3600);
  EXPECT_EQ(s.decide().action, Action::start);
}

TEST(ScrubPlanner, SpreadIsDeterministicPerTargetAndWithinTheRange) {
  auto p = policy("*", 0.5);
  TargetState st;
  st.last_completed_end = kSat;
  double interval = 7 * kDay;
  std::set<long long> seen;
  for (std::string k : {"zfs_tank", "btrfs__srv", "btrfs__home", "xfs__var", "md_md0", "zfs_backup"}) {
    double due = due_time(p, st, k);
    EXPECT_GE(due, kSat + interval);
    EXPECT_LT(due, kSat + interval * 1.5);
    EXPECT_DOUBLE_EQ(due, due_time(p, st, k));  // stable across restarts
    seen.insert(static_cast<long long>(due));
  }
  EXPECT_GE(seen.size(), 5u) << "targets should not all get the same start time";
  p.spread = 0;
  EXPECT_DOUBLE_EQ(due_time(p, st, "zfs_tank"), kSat + interval);
}

TEST(ScrubPlanner, LoadAboveThresholdWaitsAndRetriesLaterInTheWindow) {
  auto p = policy("Sat 01:00-06:00");
  p.io_load_threshold = 40;
  Sim s(p);
  s.st.first_seen = kSat - 10 * kDay;
  s.advance_to(kSat + 2 * 3600);
  s.in.io_load = 75.5;
  auto d = s.decide();
  EXPECT_EQ(d.action, Action::none);
  EXPECT_EQ(d.code, "io_load");
  EXPECT_NE(d.reason.find("75.5"), std::string::npos) << d.reason;
  s.advance_to(kSat + 2.5 * 3600);
  s.in.io_load = 12;
  EXPECT_EQ(s.decide().action, Action::start);
  // Threshold 0 disables the check.
  s.pol.io_load_threshold = 0;
  s.in.io_load = 99;
  EXPECT_EQ(s.decide().action, Action::start);
}

TEST(ScrubPlanner, ConcurrencyLimitCountsEveryRunningScrubOnTheHost) {
  Sim s(policy());
  s.in.running_on_host = 1;
  EXPECT_EQ(s.decide().code, "concurrency");
  s.in.max_concurrent = 2;
  EXPECT_EQ(s.decide().action, Action::start);
}

TEST(ScrubPlanner, ConcurrencyLimitAcrossTargetsStartsOnlyOne) {
  // Three due targets, max_concurrent 1: the probe plans them in turn and counts its own starts.
  auto p = policy();
  int running = 0, starts = 0;
  for (std::string key : {"btrfs_a", "btrfs_b", "zfs_c"}) {
    TargetState st;
    Observation obs;
    PlanInput in;
    in.policy = &p;
    in.key = key;
    in.now = kSat;
    in.max_concurrent = 1;
    in.running_on_host = running;
    absorb(st, obs, kSat);
    auto d = plan(in, st, obs);
    if (d.action == Action::start) {
      ++starts;
      ++running;
    } else {
      EXPECT_EQ(d.code, "concurrency");
    }
  }
  EXPECT_EQ(starts, 1);
}

// Our pause (btrfs: a cancel that keeps the position) while our own job still writes its last records:
// the tool's status says running for a moment. That is not a resume, so the later idle is still our
// pause, not the run's end (CI under load closed it as a canceled run).
TEST(ScrubPlanner, OurJobWindingDownAfterOurPauseIsNotAResume) {
  TargetState st;
  st.running = st.by_us = st.paused_by_us = true;
  st.run_start = kSat - 60;
  Observation lag;
  lag.phase = Phase::running;
  lag.winding_down = true;
  EXPECT_FALSE(absorb(st, lag, kSat));
  EXPECT_TRUE(st.paused_by_us);
  Observation idle;
  idle.last_outcome = Outcome::canceled;
  idle.last_end = kSat + 1;
  EXPECT_FALSE(absorb(st, idle, kSat + 2)) << "still our pause: the run continues in the next window";
  EXPECT_TRUE(st.running);
  EXPECT_TRUE(st.last.result.empty()) << st.last.result;
  // Resumed by somebody (a real running scrub): its later end is the run's end.
  Observation resumed;
  resumed.phase = Phase::running;
  EXPECT_FALSE(absorb(st, resumed, kSat + 10));
  EXPECT_FALSE(st.paused_by_us);
  EXPECT_TRUE(absorb(st, idle, kSat + 20));
  EXPECT_FALSE(st.running);
}

TEST(ScrubPlanner, NeverStartsWhileScrubbingResilveringOrDegraded) {
  Sim s(policy());
  s.obs.phase = Phase::running;  // somebody else's scrub
  auto d = s.decide();
  EXPECT_EQ(d.code, "busy");
  EXPECT_TRUE(s.st.running);
  EXPECT_FALSE(s.st.by_us);
  Sim r(policy());
  r.obs.resilvering = true;
  EXPECT_EQ(r.decide().code, "resilvering");
  Sim g(policy());
  g.obs.degraded = true;
  EXPECT_EQ(g.decide().code, "degraded");
  g.pol.allow_degraded = true;
  EXPECT_EQ(g.decide().action, Action::start);
}

TEST(ScrubPlanner, WindowEndPausesCancelsOrContinuesOurRun) {
  for (auto [mode, can_pause, want] :
       {std::tuple{config::AtWindowEnd::pause, true, Action::pause},
        std::tuple{config::AtWindowEnd::pause, false, Action::cancel},
        std::tuple{config::AtWindowEnd::cancel, true, Action::cancel},
        std::tuple{config::AtWindowEnd::keep_running, true, Action::none}}) {
    auto p = policy("daily 01:00-05:00");
    p.at_window_end = mode;
    Sim s(p);
    s.in.can_pause = can_pause;
    s.advance_to(kSat + 2 * 3600);
    ASSERT_EQ(s.decide().action, Action::start);
    s.started();
    s.advance_to(kSat + 4 * 3600);
    EXPECT_EQ(s.decide().code, "running");
    s.advance_to(kSat + 5 * 3600 + 30);
    EXPECT_EQ(s.decide().action, want) << config::at_window_end_name(mode) << " can_pause=" << can_pause;
  }
}

TEST(ScrubPlanner, PausedRunResumesInTheNextWindowAndIsNotANewRun) {
  auto p = policy("daily 01:00-05:00");
  Sim s(p);
  s.advance_to(kSat + 2 * 3600);
  ASSERT_EQ(s.decide().action, Action::start);
  s.started();
  double start = s.st.run_start;
  s.advance_to(kSat + 5 * 3600 + 30);
  ASSERT_EQ(s.decide().action, Action::pause);
  s.st.paused_by_us = true;
  s.obs.phase = Phase::paused;
  s.advance_to(kSat + 12 * 3600);
  auto d = s.decide();
  EXPECT_EQ(d.code, "paused");
  EXPECT_TRUE(s.st.running);
  s.advance_to(kSat + kDay + 1 * 3600 + 60);
  EXPECT_EQ(s.decide().action, Action::resume);
  EXPECT_DOUBLE_EQ(s.st.run_start, start);
  EXPECT_TRUE(s.st.runs.empty());
  // btrfs "pauses" by canceling (status says aborted, idle): still a paused run of ours, not an end.
  Sim b(p);
  b.advance_to(kSat + 2 * 3600);
  b.decide();
  b.started();
  b.st.paused_by_us = true;
  b.obs = Observation{};
  b.obs.last_outcome = Outcome::canceled;
  b.obs.last_end = b.now();
  b.advance_to(kSat + 6 * 3600);
  EXPECT_EQ(b.decide().code, "paused");
  EXPECT_TRUE(b.st.running);
  EXPECT_TRUE(b.st.runs.empty());
}

TEST(ScrubPlanner, RestartMidScrubResumesWatchingInsteadOfStartingAnother) {
  Sim s(policy());
  ASSERT_EQ(s.decide().action, Action::start);
  s.started();
  s.st.job_pid = 4242;
  s.st.job_dir = "/var/lib/fsaudit/scrub/jobs/btrfs__srv";
  std::string saved = s.st.serialize();
  // The daemon restarts 10 minutes later; the scrub still runs.
  s.advance_to(s.now() + 600);
  TargetState restored = TargetState::parse(saved);
  EXPECT_TRUE(restored.running);
  EXPECT_TRUE(restored.by_us);
  EXPECT_EQ(restored.job_pid, 4242);
  Observation obs;
  obs.phase = Phase::running;
  PlanInput in = s.in;
  in.now = s.now();
  in.running_on_host = 1;
  absorb(restored, obs, in.now);
  auto d = plan(in, restored, obs);
  EXPECT_EQ(d.action, Action::none);
  EXPECT_EQ(d.code, "running");
  EXPECT_DOUBLE_EQ(restored.run_start, s.st.run_start);
  // And when it has ended meanwhile, the run is closed with our start time and counted once.
  Observation done;
  done.last_outcome = Outcome::finished;
  done.started = s.st.run_start;
  done.last_end = s.st.run_start + 300;
  done.last_duration = 300;
  done.errors.found = 2;
  done.errors.repaired = 2;
  done.errors.uncorrectable = 0;
  EXPECT_TRUE(absorb(restored, done, in.now + 60));
  EXPECT_FALSE(restored.running);
  EXPECT_EQ(restored.last.result, "errors");
  EXPECT_TRUE(restored.last.by_us);
  EXPECT_DOUBLE_EQ(restored.last.duration, 300);
  EXPECT_EQ(restored.runs["errors"], 1u);
  EXPECT_FALSE(absorb(restored, done, in.now + 90));  // seen again: not counted twice
  EXPECT_EQ(restored.runs["errors"], 1u);
}

TEST(ScrubPlanner, ObservesRunsOfOthersIncludingOnesBetweenPolls) {
  TargetState st;
  Observation idle;
  absorb(st, idle, kSat);
  // cron starts a scrub; we see it running, then finished.
  Observation run;
  run.phase = Phase::running;
  run.started = kSat + 100;
  run.progress = 0.25;
  absorb(st, run, kSat + 130);
  EXPECT_TRUE(st.running);
  EXPECT_FALSE(st.by_us);
  EXPECT_DOUBLE_EQ(st.run_start, kSat + 100);
  Observation fin;
  fin.last_outcome = Outcome::finished;
  fin.started = kSat + 100;
  fin.last_duration = 1000;
  fin.last_end = kSat + 1100;
  fin.bytes = 5e9;
  fin.errors.found = 0;
  EXPECT_TRUE(absorb(st, fin, kSat + 1130));
  EXPECT_EQ(st.last.result, "ok");
  EXPECT_FALSE(st.last.by_us);
  EXPECT_DOUBLE_EQ(st.last_completed_end, kSat + 1100);
  ASSERT_TRUE(st.last.rate);
  EXPECT_DOUBLE_EQ(*st.last.rate, 5e6);
  // A scrub that started and ended between two polls (or before fsaudit ran).
  Observation quick;
  quick.last_outcome = Outcome::canceled;
  quick.started = kSat + 5000;
  quick.last_end = kSat + 5010;
  EXPECT_TRUE(absorb(st, quick, kSat + 6000));
  EXPECT_EQ(st.last.result, "canceled");
  EXPECT_DOUBLE_EQ(st.last_completed_end, kSat + 1100) << "a canceled scrub does not reset the interval";
  EXPECT_EQ(st.runs["ok"], 1u);
  EXPECT_EQ(st.runs["canceled"], 1u);
}

TEST(ScrubPlanner, TimerObservesObserveOnlyAndUnsupported) {
  Sim s(policy());
  s.in.timer = "zfs-scrub-monthly@tank.timer";
  auto d = s.decide();
  EXPECT_EQ(d.mode, Mode::observed_timer);
  EXPECT_EQ(d.action, Action::none);
  EXPECT_NE(d.reason.find("zfs-scrub-monthly@tank.timer"), std::string::npos);
  s.pol.detect_timers = false;
  EXPECT_EQ(s.decide().action, Action::start);
  s.pol.observe_only = true;
  EXPECT_EQ(s.decide().mode, Mode::observe_only);
  s.obs.supported = false;
  s.obs.unsupported_reason = "the kernel does not support XFS online scrub";
  d = s.decide();
  EXPECT_EQ(d.mode, Mode::unsupported);
  EXPECT_EQ(d.action, Action::none);
}

TEST(ScrubPlanner, FailedStartIsRetriedAfterABackoff) {
  Sim s(policy());
  s.st.last_attempt = s.now();
  s.st.last_attempt_error = "btrfs: not found";
  EXPECT_EQ(s.decide().code, "retry_wait");
  s.advance_to(s.now() + kRetryAfterFailureSeconds + 1);
  EXPECT_EQ(s.decide().action, Action::start);
}

TEST(ScrubConfigTest, DefaultsOverridesAndErrors) {
  auto c = config::parse_config(R"(
scrub:
  max_concurrent: 2
  window: "Sat 01:00-06:00"
  io_load_threshold: 25
  targets:
    - match: "/srv/*"
      interval: 7d
      at_window_end: cancel
    - match: tank
      observe_only: true
)",
                                "test.yaml");
  EXPECT_EQ(c.scrub.max_concurrent, 2);
  const auto& def = c.scrub.policy_for("/home");
  EXPECT_EQ(def.interval, std::chrono::hours(24 * 30));
  EXPECT_EQ(def.window.text, "Sat 01:00-06:00");
  EXPECT_EQ(def.at_window_end, config::AtWindowEnd::pause);
  EXPECT_DOUBLE_EQ(def.io_load_threshold, 25);
  const auto& srv = c.scrub.policy_for("/srv/data");
  EXPECT_EQ(srv.interval, std::chrono::hours(24 * 7));
  EXPECT_EQ(srv.at_window_end, config::AtWindowEnd::cancel);
  EXPECT_EQ(srv.window.text, "Sat 01:00-06:00") << "overrides inherit the section's defaults";
  EXPECT_TRUE(c.scrub.policy_for("tank").observe_only);
  EXPECT_FALSE(c.scrub.policy_for("tank2").observe_only);
  auto d = config::default_config();
  EXPECT_EQ(d.scrub.max_concurrent, 1);
  EXPECT_TRUE(d.scrub.defaults.window.always);
  try {
    config::parse_config("scrub:\n  window: \"Sat 25:00-06:00\"\n", "bad.yaml");
    FAIL() << "bad window accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("scrub.window"), std::string::npos) << e.what();
  }
  try {
    config::parse_config("scrub:\n  intervall: 7d\n", "typo.yaml");
    FAIL() << "unknown key accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("interval"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsaudit::scrub
