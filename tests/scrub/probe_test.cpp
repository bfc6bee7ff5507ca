// The scrub probe end to end on a fixture host tree with a scripted zpool (FakeRunner) and a
// FakeClock: starts a due scrub, never starts a second one (also across a restart), times the run
// and reads its result back, observes a timer-managed pool instead of scheduling it, and honours
// the concurrency limit across pools.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <tuple>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/metrics/store.hpp"
#include "probes/scrub/helper_verbs.hpp"
#include "probes/scrub/probe.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/xfs/scrub_driver.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::scrub {
namespace {

using testing::FakeRunner;
using testing::TempDir;
using testing::write_text;

constexpr long long kT0 = 1700265600;  // Sat 2023-11-18 00:00 UTC

std::string status(const std::string& pool, const std::string& scan) {
  return "  pool: " + pool + "\n state: ONLINE\n" + scan +
         "config:\n\n\tNAME        STATE     READ WRITE CKSUM\n\t" + pool +
         "        ONLINE       0     0     0\n\t  /tmp/a    ONLINE       0     0     0\n\nerrors: No known data errors\n";
}

// A zpool that also answers `zpool status` (every pool) as the real one does: each pool that
// `zpool list -H -o name` names, as its own `zpool status POOL` answer says, one after another.
void emulate_zpool_status(FakeRunner& r) {
  r.handler = [&r](const std::vector<std::string>& argv) -> fsaudit::CommandResult {
    if (argv != std::vector<std::string>{"zpool", "status"}) return FakeRunner::not_found(argv.empty() ? "" : argv[0]);
    auto list = r.answers.find("zpool list -H -o name");
    if (list == r.answers.end() || !list->second.ok()) return FakeRunner::not_found("zpool");
    std::string out;
    for (auto line : lines(list->second.out)) {
      auto it = r.answers.find("zpool status " + std::string(trim(line)));
      if (it == r.answers.end()) return FakeRunner::not_found("zpool");
      out += (out.empty() ? "" : "\n") + it->second.out;
    }
    return FakeRunner::exited(0, out.empty() ? "no pools available\n" : out);
  };
}

struct Host {
  TempDir dir{"scrub-probe"};
  HostPaths host = HostPaths::under(dir.path());
  FakeRunner runner;
  FakeClock clock{WallTime(std::chrono::seconds(kT0))};
  ToolPaths tools;
  std::filesystem::path state = dir / "state";
  Host() {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    std::filesystem::create_directories(dir / "proc/self");
    write_text(dir / "proc/self/mountinfo",
               "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n");
    std::filesystem::create_directories(dir / "sys/block");
    std::filesystem::create_directories(state);
    emulate_zpool_status(runner);
  }
  ProbeResult run(ScrubProbe& p) {
    ProbeContext ctx{host, runner, clock, tools, state, {}, clock.now() + std::chrono::seconds(20)};
    return p.run(Target::host(), ctx);
  }
};

config::Config cfg_from(const std::string& yaml) { return config::parse_config(yaml, "test.yaml"); }

TEST(ScrubProbe, StartsTimesAndReadsBackAZfsScrubAndSurvivesARestart) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n");
  h.runner.answer("zpool list -H -o name", "tank\n");
  h.runner.answer("zpool status tank", status("tank", "  scan: none requested\n"));
  h.runner.answer("zpool scrub tank", "");
  h.runner.answer("zpool list -H -o allocated tank", "1.50G\n");
  {
    ScrubProbe p(cfg.scrub, cfg.targets);
    p.set_tz_offset(0);
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
    EXPECT_EQ(h.runner.count("zpool scrub tank"), 1);
    EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", {{"target", "tank"}, {"fs", "zfs"}}), 1);
    EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "tank"}, {"mode", "scheduled"}}));
    EXPECT_TRUE(std::isinf(r.metrics.value("fsaudit_scrub_last_completed_age_seconds", {{"target", "tank"}})));
  }
  // 30 s later, after a daemon restart (new probe object, same state dir): the scrub is running.
  h.clock.advance(std::chrono::seconds(30));
  h.runner.answer("zpool status tank",
               status("tank",
                      "  scan: scrub in progress since Sat Nov 18 01:00:05 2023\n"
                      "\t1.00G scanned at 34.1M/s, 512M issued at 17.0M/s, 1.50G total\n"
                      "\t0B repaired, 33.33% done, 00:01:00 to go\n"));
  {
    ScrubProbe p(cfg.scrub, cfg.targets);
    p.set_tz_offset(0);
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
    EXPECT_EQ(h.runner.count("zpool scrub tank"), 1) << "must not start a second scrub";
    EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", {{"target", "tank"}}), 1);
    EXPECT_NEAR(r.metrics.value("fsaudit_scrub_progress_ratio", {{"target", "tank"}}), 0.3333, 1e-4);
    EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_start_timestamp_seconds", {{"target", "tank"}}),
                     static_cast<double>(kT0 + 3600));
    EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "tank"}, {"code", "running"}}));
  }
  // Finished: timed and read back; not due again for 30 days.
  h.clock.advance(std::chrono::seconds(300));
  h.runner.answer("zpool status tank",
               status("tank", "  scan: scrub repaired 0B in 00:02:00 with 0 errors on Sat Nov 18 01:02:05 2023\n"));
  ScrubProbe p(cfg.scrub, cfg.targets);
  p.set_tz_offset(0);
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  metrics::Labels l{{"target", "tank"}, {"fs", "zfs"}};
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 0);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_end_timestamp_seconds", l), kT0 + 3600 + 125);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_duration_seconds", l), 120);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l), 1.5 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_rate_bytes_per_second", l), 1.5 * 1024 * 1024 * 1024 / 120);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_last_errors", {{"target", "tank"}, {"kind", "uncorrectable"}}), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "tank"}, {"result", "ok"}}), 1);
  // Idle again: no pause flag, and a counter only for the result seen (issue 33's series budget).
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_paused", l));
  for (const char* never : {"errors", "canceled", "failed"})
    EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", "tank"}, {"result", never}})) << never;
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_result_info", {{"target", "tank"}, {"started_by", "fsaudit"}}));
  double age = r.metrics.value("fsaudit_scrub_last_completed_age_seconds", l);
  EXPECT_NEAR(age, h.clock.wall_seconds() - (kT0 + 3600 + 125), 1);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_next_scheduled_timestamp_seconds", l), kT0 + 3600 + 125 + 30 * 86400.0);
  EXPECT_EQ(h.runner.count("zpool scrub tank"), 1);
  // Later polls of the same finished scrub reuse the size its record holds: no zpool list per poll.
  const int lists = h.runner.count("zpool list -H -o allocated tank");
  EXPECT_GE(lists, 1);
  h.clock.advance(std::chrono::seconds(30));
  r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool list -H -o allocated tank"), lists);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l), 1.5 * 1024 * 1024 * 1024);
}

// fsaudit's own writes: a pass that changes nothing rewrites no state file (each write is an fsync
// on the state directory's filesystem, per scrub target, every 30 s); a pass that changes it does.
// The zfs probe's recent `zpool status` stands for the scrub probe's own: no second zpool process. Not
// one begun before the scrub probe's own start of a scrub, nor one older than 40 s.
TEST(ScrubProbe, TakesTheZfsProbesRecentStatusNotOneOlderThanItsOwnStart) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n");
  h.runner.answer("zpool list -H -o name", "tank\n");
  h.runner.answer("zpool status tank", status("tank", "  scan: none requested\n"));
  h.runner.answer("zpool scrub tank", "");
  auto share = std::make_shared<zfs::StatusShare>();
  auto post = [&](const std::string& scan) {
    auto rep = zfs::parse_zpool_status(status("tank", scan));
    ASSERT_TRUE(rep.ok()) << rep.error();
    share->post(h.clock.now(), "zpool", *rep);
  };
  ScrubProbe p(cfg.scrub, cfg.targets, "", share);
  p.set_tz_offset(0);
  post("  scan: none requested\n");
  h.clock.advance(std::chrono::seconds(5));
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool status"), 0) << "the zfs probe's status, 5 s old, stands for ours";
  EXPECT_EQ(h.runner.count("zpool scrub tank"), 1);

  // The zfs probe's next status began before that start: the scrub probe asks zpool itself.
  h.runner.answer("zpool status tank",
                  status("tank", "  scan: scrub in progress since Sat Nov 18 00:00:05 2023\n"
                                 "\t1.00G scanned at 34.1M/s, 512M issued at 17.0M/s, 1.50G total\n"
                                 "\t0B repaired, 33.33% done, 00:01:00 to go\n"));
  h.clock.advance(std::chrono::seconds(30));
  r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool status"), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", {{"target", "tank"}}), 1);

  // A status begun after the start is taken again, and says what the scrub probe then reports.
  post("  scan: scrub in progress since Sat Nov 18 00:00:05 2023\n"
       "\t1.40G scanned at 34.1M/s, 1.20G issued at 17.0M/s, 1.50G total\n"
       "\t0B repaired, 80.00% done, 00:00:20 to go\n");
  h.clock.advance(std::chrono::seconds(20));
  r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool status"), 1);
  EXPECT_NEAR(r.metrics.value("fsaudit_scrub_progress_ratio", {{"target", "tank"}}), 0.8, 1e-9);

  // 41 s after the zfs probe's last status: too old; asked again.
  h.clock.advance(std::chrono::seconds(21));
  r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool status"), 2);
  EXPECT_EQ(h.runner.count("zpool scrub tank"), 1) << "never a second start";
}

TEST(ScrubProbe, UnchangedStateIsNotRewrittenAChangedOneIs) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n");
  h.runner.answer("zpool list -H -o name", "tank\n");
  h.runner.answer("zpool status tank", status("tank", "  scan: scrub repaired 0B in 00:02:00 with 0 errors on Fri Nov 17 01:02:05 2023\n"));
  h.runner.answer("zpool list -H -o allocated tank", "1.50G\n");
  ScrubProbe p(cfg.scrub, cfg.targets);
  p.set_tz_offset(0);
  auto inode = [&] {
    struct stat st {};
    for (const auto& e : std::filesystem::directory_iterator(h.state / "scrub"))
      if (e.path().extension() == ".state" && ::stat(e.path().c_str(), &st) == 0) return st.st_ino;
    return static_cast<ino_t>(0);
  };
  ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
  const ino_t first = inode();
  ASSERT_NE(first, 0u) << "no state file written on the first pass";
  for (int i = 0; i < 3; ++i) {
    h.clock.advance(std::chrono::seconds(30));
    ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
    EXPECT_EQ(inode(), first) << "pass " << i << " rewrote an unchanged state file";
  }
  // A new completed scrub changes the state: written (atomically: a new file replaces the old).
  h.clock.advance(std::chrono::seconds(30));
  h.runner.answer("zpool status tank", status("tank", "  scan: scrub repaired 0B in 00:03:00 with 0 errors on Sat Nov 18 00:00:10 2023\n"));
  ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
  EXPECT_NE(inode(), first) << "a changed state was not written";
  // Removed behind the daemon's back: written again on the next pass.
  for (const auto& e : std::filesystem::directory_iterator(h.state / "scrub"))
    if (e.path().extension() == ".state") std::filesystem::remove(e.path());
  h.clock.advance(std::chrono::seconds(30));
  ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
  EXPECT_NE(inode(), 0u) << "a removed state file was not written again";
}

TEST(ScrubProbe, EnabledDistroTimerMeansObserveAndSayWhy) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n");
  std::filesystem::create_directories(h.dir / "etc/systemd/system/timers.target.wants");
  write_text(h.dir / "etc/systemd/system/timers.target.wants/zfs-scrub-monthly@tank.timer", "");
  h.runner.answer("zpool list -H -o name", "tank\n");
  h.runner.answer("zpool status tank", status("tank", "  scan: none requested\n"));
  ScrubProbe p(cfg.scrub, cfg.targets);
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool scrub tank"), 0);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info",
                            {{"target", "tank"}, {"mode", "observed-timer"}, {"timer", "zfs-scrub-monthly@tank.timer"}}));
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_next_scheduled_timestamp_seconds", {{"target", "tank"}}));
}

TEST(ScrubProbe, ConcurrencyLimitAcrossPoolsAndOthersScrubsCount) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n  max_concurrent: 1\n");
  h.runner.answer("zpool list -H -o name", "a\nb\nc\n");
  for (std::string p : {"a", "b", "c"}) {
    h.runner.answer("zpool status " + p, status(p, "  scan: none requested\n"));
    h.runner.answer("zpool scrub " + p, "");
  }
  // Pool c is already being scrubbed by someone else: nothing may start.
  h.runner.answer("zpool status c", status("c",
                                        "  scan: scrub in progress since Fri Nov 17 23:00:00 2023\n"
                                        "\t1.00G scanned at 1M/s, 1.00G issued at 1M/s, 9.00G total\n"
                                        "\t0B repaired, 11.11% done, 02:00:00 to go\n"));
  ScrubProbe p(cfg.scrub, cfg.targets);
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool scrub a") + h.runner.count("zpool scrub b"), 0);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "a"}, {"code", "concurrency"}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "c"}, {"code", "busy"}}));
  // c finishes: exactly one of a/b starts.
  h.clock.advance(std::chrono::seconds(60));
  h.runner.answer("zpool status c", status("c", "  scan: scrub repaired 0B in 01:00:30 with 0 errors on Sat Nov 18 00:00:30 2023\n"));
  h.runner.answer("zpool list -H -o allocated c", "9G\n");
  r = h.run(p);
  EXPECT_EQ(h.runner.count("zpool scrub a") + h.runner.count("zpool scrub b"), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "c"}, {"result", "ok"}}), 1);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_result_info", {{"target", "c"}, {"started_by", "other"}}));
}

TEST(ScrubProbe, LoadAboveThresholdFromPressureWaits) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 30\n");
  std::filesystem::create_directories(h.dir / "proc/pressure");
  write_text(h.dir / "proc/pressure/io", "some avg10=55.00 avg60=40.00 avg300=20.00 total=1\nfull avg10=1.00 avg60=1.00 avg300=1.00 total=1\n");
  h.runner.answer("zpool list -H -o name", "tank\n");
  h.runner.answer("zpool status tank", status("tank", "  scan: none requested\n"));
  h.runner.answer("zpool scrub tank", "");
  ScrubProbe p(cfg.scrub, cfg.targets);
  auto r = h.run(p);
  EXPECT_EQ(h.runner.count("zpool scrub tank"), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_host_io_load_percent", {{"source", "pressure"}}), 55);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "tank"}, {"code", "io_load"}}));
  write_text(h.dir / "proc/pressure/io", "some avg10=5.00 avg60=40.00 avg300=20.00 total=1\n");
  h.clock.advance(std::chrono::seconds(60));
  r = h.run(p);
  EXPECT_EQ(h.runner.count("zpool scrub tank"), 1);
}

// An idle, healthy raid1 md0 of 1 GiB in the host's sysfs tree; returns its md/ directory.
std::filesystem::path idle_md0(Host& h) {
  auto md = h.dir / "sys/block/md0/md";
  std::filesystem::create_directories(md);
  write_text(md / "level", "raid1\n");
  write_text(md / "sync_action", "idle\n");
  write_text(md / "degraded", "0\n");
  write_text(md / "mismatch_cnt", "0\n");
  write_text(h.dir / "sys/block/md0/size", "2097152\n");
  return md;
}

TEST(ScrubProbe, MdCheckThroughSysfs) {
  Host h;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n  filesystems: [md]\n");
  auto md = idle_md0(h);
  ScrubProbe p(cfg.scrub, cfg.targets);
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  // Read: no fsaudit_scrub_observe_success series (it is there only as 0, while unreadable).
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_observe_success", {{"target", "md0"}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "md0"}, {"fs", "md"}, {"mode", "scheduled"}}));
  auto action = read_file(md / "sync_action");
  ASSERT_TRUE(action.ok());
  EXPECT_EQ(*action, "check\n");
  // The kernel runs the check, finds 128 mismatched sectors, goes idle.
  write_text(md / "sync_action", "check\n");
  write_text(md / "sync_completed", "1048576 / 2097152\n");
  h.clock.advance(std::chrono::seconds(30));
  r = h.run(p);
  EXPECT_NEAR(r.metrics.value("fsaudit_scrub_progress_ratio", {{"target", "md0"}}), 0.5, 1e-9);
  write_text(md / "sync_action", "idle\n");
  write_text(md / "last_sync_action", "check\n");
  write_text(md / "mismatch_cnt", "128\n");
  h.clock.advance(std::chrono::seconds(30));
  r = h.run(p);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_last_errors", {{"target", "md0"}, {"kind", "found"}}), 128);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_duration_seconds", {{"target", "md0"}, {"fs", "md"}}), 60);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "md0"}, {"result", "errors"}}), 1);
}

// An md attribute that is there but cannot be read, or holds junk, fails the run with the file and
// the reason: it is not taken for "no mismatches" or "idle" (issue 32, class 1). A directory in the
// file's place gives EISDIR even to root.
TEST(ScrubProbe, MdUnreadableOrJunkAttributeFailsWithTheFile) {
  for (const char* bad : {"mismatch_cnt:junk", "mismatch_cnt:dir", "degraded:dir", "sync_action:dir"}) {
    Host h;
    auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n  observe_only: true\n  filesystems: [md]\n");
    auto md = idle_md0(h);
    std::string file = std::string(bad).substr(0, std::string(bad).find(':'));
    bool dir = std::string(bad).ends_with(":dir");
    std::filesystem::remove(md / file);
    if (dir) std::filesystem::create_directories(md / file);
    else write_text(md / file, "twelve\n");
    ScrubProbe p(cfg.scrub, cfg.targets);
    auto r = h.run(p);
    EXPECT_NE(r.outcome, fsaudit::Outcome::ok) << bad;
    EXPECT_NE(r.reason.find(file), std::string::npos) << bad << ": " << r.reason;
    // The array's own series say that its state could not be read.
    EXPECT_EQ(r.metrics.value("fsaudit_scrub_observe_success", {{"target", "md0"}}), 0) << bad;
  }
}

// Canaries are corrupted on purpose and scrubbed by their own cycle: the probe made by
// make_scrub_probe (as fsauditd and fsaudit-helper make it) neither schedules nor accepts a request
// for a canary's filesystem, pool or md array; production ones beside them stay targets.
TEST(ScrubProbe, CanaryFilesystemsPoolsAndArraysAreNeverTargets) {
  Host h;
  h.runner.handler = nullptr;
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "30 22 0:40 / /prod rw,relatime shared:2 - btrfs /dev/sdb rw\n"
             "31 22 0:41 / /canary/btrfs rw,relatime shared:3 - btrfs /dev/loop9 rw\n"
             "32 22 9:5 / /canary/xfs rw,relatime shared:4 - xfs /dev/md5 rw\n");
  for (const char* md : {"md5", "md6"}) {
    auto d = h.dir / "sys/block" / md / "md";
    std::filesystem::create_directories(d);
    write_text(d / "level", "raid1\n");
    write_text(d / "sync_action", "idle\n");
  }
  h.runner.answer("zpool status", status("tank", "  scan: none requested\n") + "\n" +
                                      status("fsauditcanary", "  scan: none requested\n"));
  auto cfg = cfg_from("scrub:\n  observe_only: true\n  io_load_threshold: 0\n");
  for (auto [name, fs, mnt, pool] : {std::tuple{"c-btrfs", "btrfs", "/canary/btrfs", ""},
                                     {"c-xfs", "xfs", "/canary/xfs", ""},
                                     {"c-zfs", "zfs", "", "fsauditcanary"}}) {
    config::CanaryTarget c;
    c.name = name;
    c.fs = fs;
    c.mountpoint = mnt;
    c.pool = pool;
    cfg.canary.canaries.push_back(c);
  }
  auto p = make_scrub_probe(cfg, nullptr);
  auto r = h.run(static_cast<ScrubProbe&>(*p));
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  for (const char* t : {"/prod", "tank", "md6"})
    EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", t}})) << t;
  for (const char* t : {"/canary/btrfs", "/canary/xfs", "fsauditcanary", "md5"})
    EXPECT_FALSE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", t}})) << t;
  ProbeContext ctx{h.host, h.runner, h.clock, h.tools, h.state, {}, h.clock.now() + std::chrono::seconds(20)};
  auto refused = p->request("start", "fsauditcanary", ctx);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("no scrub target named 'fsauditcanary'"), std::string::npos) << refused.error();
  EXPECT_EQ(h.runner.count("zpool scrub fsauditcanary"), 0);

  // The same probe without the exclusion (a ScrubProbe built from the targets alone) sees them all:
  // the fixture does hold them.
  ScrubProbe bare(cfg.scrub, cfg.targets);
  r = h.run(bare);
  for (const char* t : {"/canary/btrfs", "fsauditcanary", "md5"})
    EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", t}})) << t;
}

TEST(ScrubProbe, WindowEndOnAZpoolWithoutPauseFallsBackToCancel) {
  Host h;
  // wall starts at Sat 01:00 UTC (FakeClock starts 1 h after kT0); window Sat 01:00-02:00.
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n  window: \"Sat 01:00-02:00\"\n");
  h.runner.answer("zpool list -H -o name", "tank\n");
  h.runner.answer("zpool status tank", status("tank", "  scan: none requested\n"));
  h.runner.answer("zpool scrub tank", "");
  ScrubProbe p(cfg.scrub, cfg.targets);
  p.set_tz_offset(0);
  auto r = h.run(p);
  ASSERT_EQ(h.runner.count("zpool scrub tank"), 1);
  h.runner.answer("zpool status tank", status("tank",
                                           "  scrub: scrub in progress for 0h59m, 80.00% done, 0h15m to go\n"));
  // zfs-fuse's zpool: "invalid option 'p'" and the usage text, exit 2.
  h.runner.answer("zpool scrub -p tank", "", 2, "invalid option 'p'\nusage:\n\tscrub [-s] <pool> ...\n");
  h.runner.answer("zpool scrub -s tank", "");
  h.clock.advance(std::chrono::minutes(61));
  r = h.run(p);
  EXPECT_EQ(h.runner.count("zpool scrub -p tank"), 1);
  EXPECT_EQ(h.runner.count("zpool scrub -s tank"), 1) << "cannot pause: must cancel at the window's end";
  // Learned: the next window end cancels directly, without trying -p again.
  auto saved = read_file(h.state / "scrub/zfs_tank.state");
  ASSERT_TRUE(saved.ok());
  EXPECT_NE(saved->find("pause_unsupported=1"), std::string::npos);
}

// `btrfs scrub status -R` as btrfs-progs 6.2 printed it (kernel 6.18) for a two-device raid1 with one
// corrupted copy: before the first scrub; after the kernel finished but while our `scrub start -B`
// had written only the clean device's record (seen on 4 consecutive polls); and at the end.
std::string btrfs_status(const std::string& state_lines, long long data, long long tree, int csum, int corrected) {
  return "UUID:             f3637bff-14f2-4d81-a479-1f706b6797fc\n" + state_lines +
         "\tdata_extents_scrubbed: " + std::to_string(data / 63488) + "\n\ttree_extents_scrubbed: " +
         std::to_string(tree / 16384) + "\n\tdata_bytes_scrubbed: " + std::to_string(data) +
         "\n\ttree_bytes_scrubbed: " + std::to_string(tree) + "\n\tread_errors: 0\n\tcsum_errors: " +
         std::to_string(csum) +
         "\n\tverify_errors: 0\n\tno_csum: 0\n\tcsum_discards: 0\n\tsuper_errors: 0\n\tmalloc_errors: 0\n"
         "\tuncorrectable_errors: 0\n\tunverified_errors: 0\n\tcorrected_errors: " +
         std::to_string(corrected) + "\n\tlast_physical: 67305472\n";
}

// The state lines `btrfs scrub status` prints above the figures: start time, status, duration.
std::string btrfs_state(const std::string& started, const std::string& status, const std::string& duration) {
  return "Scrub started:    " + started + "\nStatus:           " + status + "\nDuration:         " + duration + "\n";
}

// One btrfs at /mnt/r1 and the scrub probe on btrfs alone; the detach helper is "/bin/true", asked
// through the runner like every command (the test's handler answers it with the watcher's pid).
config::Config btrfs_r1(Host& h) {
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "40 22 0:45 / /mnt/r1 rw,relatime shared:20 - btrfs /dev/loop7 rw,space_cache=v2,subvolid=5,subvol=/\n");
  h.tools["fsaudit-scrub-detach"] = "/bin/true";
  return cfg_from("scrub:\n  filesystems: [btrfs]\n  spread: 0\n  io_load_threshold: 0\n");
}

// The detach helper answers with its watcher's pid, 4242 (btrfs_watcher_alive() makes it live).
void detach_answers_4242(Host& h) {
  h.runner.handler = [](const std::vector<std::string>& argv) {
    if (!argv.empty() && argv[0] == "/bin/true") return FakeRunner::exited(0, "pid=4242\n");
    return FakeRunner::not_found(argv.empty() ? "" : argv[0]);
  };
}

// The watcher (pid 4242) still waits for `btrfs scrub start -B`. Returns the scrub's start time (now)
// and that time as `btrfs scrub status` prints it.
std::pair<std::time_t, std::string> btrfs_watcher_alive(Host& h) {
  std::filesystem::create_directories(h.dir / "proc/4242");
  write_text(h.dir / "proc/4242/cmdline", std::string("fsaudit-scrub-detach\0", 21));
  char started[64];
  std::time_t t0 = static_cast<std::time_t>(h.clock.wall_seconds());
  std::strftime(started, sizeof started, "%a %b %e %H:%M:%S %Y", std::gmtime(&t0));
  return {t0, started};
}

// Our `btrfs scrub start -B` on /mnt/r1 wrote its last records and exited 0 at t0 + `took`: the watcher
// is gone and the job's status file says so.
void btrfs_job_exited(Host& h, std::time_t t0, std::time_t took) {
  std::filesystem::remove_all(h.dir / "proc/4242");
  std::filesystem::create_directories(h.state / "scrub/jobs/btrfs__mnt_r1");
  write_text(h.state / "scrub/jobs/btrfs__mnt_r1/status",
             "exit=0\nstart=" + std::to_string(t0) + "\nend=" + std::to_string(t0 + took) + "\n");
}

TEST(ScrubProbe, BtrfsStatusWithOneDeviceRecordPendingIsNotTheEndOfOurScrub) {
  Host h;
  auto cfg = btrfs_r1(h);
  detach_answers_4242(h);
  const std::string status_cmd = "btrfs scrub status -d -R /mnt/r1";
  h.runner.answer(status_cmd, btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  ScrubProbe p(cfg.scrub, cfg.targets);
  metrics::Labels l{{"target", "/mnt/r1"}, {"fs", "btrfs"}};
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "/mnt/r1"}, {"code", "start"}}));
  ASSERT_EQ(h.runner.count("/bin/true " + (h.state / "scrub/jobs/btrfs__mnt_r1").string() +
                           " -- btrfs scrub start -B -R /mnt/r1"), 1)
      << h.runner.calls.back();

  // The watcher (pid 4242) still waits for `btrfs scrub start -B`; btrfs-progs has one device's record.
  const auto watched = btrfs_watcher_alive(h);
  const std::time_t t0 = watched.first;
  const std::string& started = watched.second;
  auto state_lines = [&](const std::string& st) { return btrfs_state(started, st, "0:00:00"); };
  h.runner.answer(status_cmd, btrfs_status(state_lines("interrupted"), 126976, 147456, 0, 0));
  h.clock.advance(std::chrono::seconds(1));
  r = h.run(p);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l))
      << "half of the devices' records is not a finished scrub";
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "canceled"}})) << "a result never seen has no series";

  // `scrub start -B` wrote the last record and exited 0; the watcher is gone.
  btrfs_job_exited(h, t0, 1);
  h.runner.answer(status_cmd, btrfs_status(state_lines("finished"), 253952, 294912, 1, 1));
  h.clock.advance(std::chrono::seconds(1));
  r = h.run(p);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_last_errors", {{"target", "/mnt/r1"}, {"kind", "found"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_last_errors", {{"target", "/mnt/r1"}, {"kind", "repaired"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "errors"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "canceled"}})) << "a result never seen has no series";
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 0);
}

// An operator's pause of our btrfs scrub (btrfs: a cancel that keeps the position) while our `scrub start
// -B` has not yet written its last records: for a moment the status is not final (`lag`: "interrupted",
// still "running" while the job's progress socket is open, or "no stats" when paused before the first
// progress record) and the job lives, so the scrub reads as running. That is our job winding down, not a resume: once it has exited the scrub is paused, not a
// canceled run (CI under load: ScrubControlLab saw "canceled" after a pause, both ways).
void btrfs_pause_while_our_job_winds_down(const std::string& lag) {
  SCOPED_TRACE("status after the pause: " + lag);
  Host h;
  auto cfg = btrfs_r1(h);
  detach_answers_4242(h);
  const std::string status_cmd = "btrfs scrub status -d -R /mnt/r1";
  h.runner.answer(status_cmd, btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  h.runner.answer("btrfs scrub cancel /mnt/r1", "");
  ScrubProbe p(cfg.scrub, cfg.targets);
  metrics::Labels l{{"target", "/mnt/r1"}, {"fs", "btrfs"}};
  auto r = h.run(p);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "/mnt/r1"}, {"code", "start"}}));
  const auto watched = btrfs_watcher_alive(h);
  const std::time_t t0 = watched.first;
  const std::string& started = watched.second;
  auto state_lines = [&](const std::string& st) { return btrfs_state(started, st, "0:00:01"); };
  h.runner.answer(status_cmd, btrfs_status(state_lines("running"), 126976, 147456, 0, 0));
  h.clock.advance(std::chrono::seconds(1));
  r = h.run(p);
  ASSERT_EQ(r.metrics.value("fsaudit_scrub_running", l), 1);

  // The pause; btrfs-progs has not written the canceled records yet and the job still lives.
  h.runner.answer(status_cmd, lag == "no stats" ? btrfs_status("\tno stats available\n", 0, 0, 0, 0)
                                                  : btrfs_status(state_lines(lag), 126976, 147456, 0, 0));
  h.clock.advance(std::chrono::seconds(1));
  ProbeContext ctx{h.host, h.runner, h.clock, h.tools, h.state, {}, h.clock.now() + std::chrono::seconds(20)};
  auto done = p.request("pause", "/mnt/r1", ctx);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(*done, "paused the scrub of /mnt/r1");
  h.clock.advance(std::chrono::seconds(1));
  r = h.run(p);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "canceled"}}));

  // The job has written "aborted" and exited.
  btrfs_job_exited(h, t0, 2);
  h.runner.answer(status_cmd, btrfs_status(state_lines("aborted"), 126976, 147456, 0, 0));
  h.clock.advance(std::chrono::seconds(1));
  r = h.run(p);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_paused", l), 1) << "our pause, resumed by `fsauditctl scrub start`";
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "canceled"}}))
      << "a pause is not the run's end";
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
}

TEST(ScrubProbe, BtrfsPauseStaysAPauseWhileOurJobWritesItsLastRecords) {
  btrfs_pause_while_our_job_winds_down("interrupted");
}

TEST(ScrubProbe, BtrfsPauseStaysAPauseWhileOurJobStillReadsAsRunning) {
  btrfs_pause_while_our_job_winds_down("running");
}

// Paused a second in (ScrubControlLab, seen here): btrfs-progs had written no progress record yet.
TEST(ScrubProbe, BtrfsPauseBeforeTheFirstProgressRecordStaysAPause) {
  btrfs_pause_while_our_job_winds_down("no stats");
}

// btrfs says the scrub finished, with 0 bytes, while our `btrfs scrub start -B` never exits (seen in
// a lab run: btrfs-progs asleep on a futex for 25 minutes, holding the filesystem). Within the grace
// the scrub still shows running; after it, fsaudit stops the job's process group and counts a failed
// run, not a clean one.
TEST(ScrubProbe, BtrfsScrubStartThatOutlivesTheScrubIsStoppedAndAZeroByteEndIsAFailure) {
  Host h;
  auto cfg = btrfs_r1(h);
  // One job: the planner's retry of the failed run finds no detach helper (this test is about the
  // hung job, not the retry).
  int starts = 0;
  h.runner.handler = [&starts](const std::vector<std::string>& argv) {
    if (!argv.empty() && argv[0] == "/bin/true" && ++starts == 1) return FakeRunner::exited(0, "pid=4242\n");
    return FakeRunner::not_found(argv.empty() ? "" : argv[0]);
  };
  const std::string status_cmd = "btrfs scrub status -d -R /mnt/r1";
  const std::string kill_cmd = "kill -TERM -- -4242";
  h.runner.answer(status_cmd, btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  h.runner.answer(kill_cmd, "");
  ScrubProbe p(cfg.scrub, cfg.targets);
  metrics::Labels l{{"target", "/mnt/r1"}, {"fs", "btrfs"}};
  auto r = h.run(p);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "/mnt/r1"}, {"code", "start"}}));

  // The watcher (pid 4242) still waits for `btrfs scrub start -B`; every device's record is final.
  const auto watched = btrfs_watcher_alive(h);
  const std::string& started = watched.second;
  h.runner.answer(status_cmd, btrfs_status(btrfs_state(started, "finished", "0:00:01"), 0, 0, 0, 0));
  h.clock.advance(std::chrono::seconds(60));
  r = h.run(p);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 1) << "within the grace the tool may still be writing";
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
  EXPECT_EQ(h.runner.count(kill_cmd), 0);

  h.clock.advance(std::chrono::seconds(300));
  r = h.run(p);
  EXPECT_EQ(h.runner.count(kill_cmd), 1) << "the hung job's process group is stopped";
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "failed"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "ok"}})) << "a result never seen has no series";
  auto st = TargetState::parse(read_file(h.state / "scrub/btrfs__mnt_r1.state").value_or(""));
  EXPECT_EQ(st.job_pid, 0) << "the job is done with once it was stopped";
  EXPECT_EQ(st.last.result, "failed");

  // Later passes leave it be: one stop, not one per pass.
  h.clock.advance(std::chrono::seconds(60));
  r = h.run(p);
  EXPECT_EQ(h.runner.count(kill_cmd), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "/mnt/r1"}, {"result", "failed"}}), 1);
}

// Between scrubs an idle btrfs is asked (`btrfs scrub status`) again only when btrfs-progs' status file
// changed (appeared, was rewritten, went away), which every `scrub start` does, or 10 minutes after it
// was last asked; while a scrub runs, every poll asks.
TEST(ScrubProbe, AnIdleBtrfsIsAskedAgainOnlyWhenItsStatusFileChanges) {
  Host h;
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "40 22 0:45 / /mnt/r1 rw,relatime shared:20 - btrfs /dev/loop7 rw,space_cache=v2,subvolid=5,subvol=/\n");
  auto cfg = cfg_from("scrub:\n  filesystems: [btrfs]\n  observe_only: true\n");
  const std::string cmd = "btrfs scrub status -d -R /mnt/r1";
  char started[64];
  std::time_t t0 = static_cast<std::time_t>(h.clock.wall_seconds()) - 3600;
  std::strftime(started, sizeof started, "%a %b %e %H:%M:%S %Y", std::gmtime(&t0));
  auto state_lines = [&](const std::string& st) { return btrfs_state(started, st, "0:00:05"); };
  const auto file = h.dir / "var/lib/btrfs/scrub.status.f3637bff-14f2-4d81-a479-1f706b6797fc";
  std::filesystem::create_directories(file.parent_path());
  write_text(file, "scrub status:1\n");
  h.runner.answer(cmd, btrfs_status(state_lines("finished"), 253952, 294912, 0, 0));
  ScrubProbe p(cfg.scrub, cfg.targets);
  metrics::Labels l{{"target", "/mnt/r1"}, {"fs", "btrfs"}};
  auto poll = [&] {
    h.clock.advance(std::chrono::seconds(30));
    auto r = h.run(p);
    EXPECT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
    return r;
  };
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count(cmd), 1);
  r = poll();
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), 1) << "an idle filesystem with an unchanged status file was asked again";
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 0);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
  // Someone ran `btrfs scrub start`: btrfs-progs rewrote the file; the next poll asks and sees it run.
  h.runner.answer(cmd, btrfs_status(state_lines("running"), 126976, 147456, 0, 0));
  write_text(file, "scrub status:1\nrunning, and longer\n");
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), 2);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 1);
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), 3) << "a running scrub is asked on every poll";
  // It finished: asked while the file stays as it is only once 10 minutes have passed.
  h.runner.answer(cmd, btrfs_status(state_lines("finished"), 253952, 294912, 0, 0));
  write_text(file, "scrub status:1\nfinished, and longer still\n");
  r = poll();
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 0);
  EXPECT_EQ(h.runner.count(cmd), 4);
  r = poll();  // the first poll that finds no run in progress asks once more, and remembers the file
  const int asked = h.runner.count(cmd);
  EXPECT_EQ(asked, 5);
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), asked);
  h.clock.advance(std::chrono::minutes(10));
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), asked + 1) << "not asked again after 10 minutes";
  // The file went away: asked once, and then again only when it comes back.
  std::filesystem::remove(file);
  r = poll();
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), asked + 2);
  write_text(file, "scrub status:1\n");
  r = poll();
  EXPECT_EQ(h.runner.count(cmd), asked + 3);
}

// A btrfs never scrubbed with btrfs-progs has no status file: it is asked once, then again when the
// file appears (the first `btrfs scrub start` creates it) or 10 minutes later.
TEST(ScrubProbe, ANeverScrubbedBtrfsIsAskedAgainWhenItsStatusFileAppears) {
  Host h;
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "40 22 0:45 / /mnt/r2 rw,relatime shared:20 - btrfs /dev/loop8 rw,space_cache=v2,subvolid=5,subvol=/\n");
  auto cfg = cfg_from("scrub:\n  filesystems: [btrfs]\n  observe_only: true\n");
  const std::string cmd = "btrfs scrub status -d -R /mnt/r2";
  h.runner.answer(cmd, btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  ScrubProbe p(cfg.scrub, cfg.targets);
  for (int i = 0; i < 5; ++i) {
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
    h.clock.advance(std::chrono::seconds(30));
  }
  EXPECT_EQ(h.runner.count(cmd), 1);
  const auto file = h.dir / "var/lib/btrfs/scrub.status.f3637bff-14f2-4d81-a479-1f706b6797fc";
  std::filesystem::create_directories(file.parent_path());
  write_text(file, "scrub status:1\n");
  ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
  EXPECT_EQ(h.runner.count(cmd), 2);
  std::filesystem::remove(file);
  h.clock.advance(std::chrono::seconds(30));
  ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
  EXPECT_EQ(h.runner.count(cmd), 3);
  h.clock.advance(std::chrono::minutes(11));
  ASSERT_EQ(h.run(p).outcome, fsaudit::Outcome::ok);
  EXPECT_EQ(h.runner.count(cmd), 4);
}

// What the pass takes from the mount table is a function of the snapshot: the daemon's unchanged
// snapshot is not selected again, and a new one (a btrfs mounted since) is.
TEST(ScrubProbe, ANewMountTableSnapshotIsDiscoveredAgain) {
  Host h;
  auto cfg = cfg_from("scrub:\n  filesystems: [btrfs]\n  observe_only: true\n");
  ScrubProbe p(cfg.scrub, cfg.targets);
  auto run_on = [&](const MountSnapshot& table) {
    ProbeContext ctx{h.host, h.runner, h.clock, h.tools, h.state, {}, h.clock.now() + std::chrono::seconds(20)};
    ctx.mounts = table;
    return p.run(Target::host(), ctx);
  };
  auto first = read_mount_table(h.host);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(run_on(*first).outcome, fsaudit::Outcome::not_applicable);
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "40 22 0:45 / /mnt/r2 rw,relatime shared:20 - btrfs /dev/loop8 rw,space_cache=v2,subvolid=5,subvol=/\n");
  h.runner.answer("btrfs scrub status -d -R /mnt/r2", btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  EXPECT_EQ(run_on(*first).outcome, fsaudit::Outcome::not_applicable) << "the same snapshot, the same targets";
  auto second = read_mount_table(h.host);
  ASSERT_TRUE(second.ok()) << second.error();
  auto r = run_on(*second);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("btrfs scrub status -d -R /mnt/r2"), 1);
  EXPECT_EQ(run_on(*first).outcome, fsaudit::Outcome::not_applicable) << "an older snapshot again";
}

// The btrfs scrub's own counts, in the one scrub family: by cause, per device (kernel names), on the
// captured `scrub status -d -R` texts the btrfs probe used to export them from.
struct BtrfsObserved {
  Host h;
  ProbeResult r;
  BtrfsObserved(const std::string& mnt, const std::string& source, const std::string& status_text) {
    write_text(h.dir / "proc/self/mountinfo", "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                                              "40 22 0:45 / " + mnt + " rw,relatime shared:20 - btrfs " + source + " rw\n");
    h.runner.answer("btrfs scrub status -d -R " + mnt, status_text);
    auto cfg = cfg_from("scrub:\n  filesystems: [btrfs]\n  observe_only: true\n");
    ScrubProbe p(cfg.scrub, cfg.targets);
    r = h.run(p);
  }
};

TEST(ScrubProbe, BtrfsScrubCountsByCauseAndDevice) {
  BtrfsObserved raid1("/mnt/r1", "/dev/loop3", testing::probe_fixture_text("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt"));
  ASSERT_EQ(raid1.r.outcome, fsaudit::Outcome::ok) << raid1.r.reason;
  const auto& b = raid1.r.metrics;
  metrics::Labels l{{"target", "/mnt/r1"}, {"fs", "btrfs"}};
  EXPECT_EQ(raid1.h.runner.count("btrfs scrub status -d -R /mnt/r1"), 1);
  EXPECT_TRUE(b.has("fsaudit_scrub_last_result_info", {{"target", "/mnt/r1"}, {"result", "errors"}, {"started_by", "other"}}));
  EXPECT_EQ(b.value("fsaudit_scrub_last_error_causes", {{"target", "/mnt/r1"}, {"cause", "csum"}}), 1);
  EXPECT_EQ(b.value("fsaudit_scrub_last_error_causes", {{"target", "/mnt/r1"}, {"cause", "read"}}), 0);
  EXPECT_EQ(b.value("fsaudit_scrub_last_errors", {{"target", "/mnt/r1"}, {"kind", "repaired"}}), 1);
  EXPECT_EQ(b.value("fsaudit_scrub_last_errors", {{"target", "/mnt/r1"}, {"kind", "uncorrectable"}}), 0);
  EXPECT_EQ(b.value("fsaudit_scrub_last_scrubbed_bytes", l), 2 * (262144 + 147456));
  EXPECT_GT(b.value("fsaudit_scrub_last_start_timestamp_seconds", l), 1.7e9);
  // Per device, by kernel name (the printed /dev/loop4 resolved through the one block-device seam).
  EXPECT_EQ(b.value("fsaudit_scrub_last_device_errors", {{"device", "loop4"}, {"kind", "found"}}), 1);
  EXPECT_EQ(b.value("fsaudit_scrub_last_device_errors", {{"device", "loop4"}, {"kind", "repaired"}}), 1);
  EXPECT_EQ(b.value("fsaudit_scrub_last_device_errors", {{"device", "loop3"}, {"kind", "found"}}), 0);

  BtrfsObserved single("/mnt/s", "/dev/loop3", testing::probe_fixture_text("btrfs/scrub-status-dR-single-uncorrectable-progs-6.2.txt"));
  ASSERT_EQ(single.r.outcome, fsaudit::Outcome::ok) << single.r.reason;
  EXPECT_EQ(single.r.metrics.value("fsaudit_scrub_last_errors", {{"target", "/mnt/s"}, {"kind", "uncorrectable"}}), 1);
  EXPECT_EQ(single.r.metrics.value("fsaudit_scrub_last_device_errors", {{"device", "loop3"}, {"kind", "uncorrectable"}}), 1);
  EXPECT_TRUE(single.r.metrics.has("fsaudit_scrub_last_start_timestamp_seconds", {{"target", "/mnt/s"}}));

  BtrfsObserved mapped("/data", "/dev/mapper/cryptdata", testing::fixture("written/btrfs/scrub-status-finished-csum-48211-uncorrectable.txt"));
  ASSERT_EQ(mapped.r.outcome, fsaudit::Outcome::ok) << mapped.r.reason;
  EXPECT_EQ(mapped.r.metrics.value("fsaudit_scrub_last_errors", {{"target", "/data"}, {"kind", "uncorrectable"}}), 48211);
  EXPECT_EQ(mapped.r.metrics.value("fsaudit_scrub_last_error_causes", {{"target", "/data"}, {"cause", "csum"}}), 48211);
}

TEST(ScrubProbe, NothingToScrubIsNotApplicable) {
  Host h;
  auto cfg = cfg_from("{}");
  h.runner.missing("zpool list -H -o name");
  ScrubProbe p(cfg.scrub, cfg.targets);
  auto r = h.run(p);
  EXPECT_EQ(r.outcome, fsaudit::Outcome::not_applicable);
}

// One `zpool status` names every pool and says what each one's scrub does: a pass runs one zpool
// process, not a list and then a status per pool. A pool whose part is cut short is asked on its own;
// output that is not zpool status at all falls back to the list of names.
TEST(ScrubProbe, OneZpoolStatusObservesEveryPool) {
  Host h;
  h.runner.handler = nullptr;
  auto cfg = cfg_from("scrub:\n  spread: 0\n  io_load_threshold: 0\n  max_concurrent: 1\n");
  auto c_cut = status("c", "  scan: none requested\n");
  c_cut = c_cut.substr(0, c_cut.find("\t  /tmp/a"));  // inside its config tree
  h.runner.answer("zpool status",
                  status("a", "  scan: scrub repaired 0B in 00:02:00 with 0 errors on Fri Nov 17 01:02:05 2023\n") + "\n" +
                      status("b",
                             "  scan: scrub in progress since Fri Nov 17 23:00:00 2023\n"
                             "\t1.00G scanned at 1M/s, 1.00G issued at 1M/s, 9.00G total\n"
                             "\t0B repaired, 11.11% done, 02:00:00 to go\n") +
                      "\n" + c_cut);
  h.runner.answer("zpool status c", status("c", "  scan: none requested\n"));
  h.runner.answer("zpool list -H -o allocated a", "2.00G\n");
  h.runner.answer("zpool scrub c", "");
  ScrubProbe p(cfg.scrub, cfg.targets);
  p.set_tz_offset(0);
  auto r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool status"), 1);
  EXPECT_EQ(h.runner.count("zpool list -H -o name"), 0);
  EXPECT_EQ(h.runner.count("zpool status a") + h.runner.count("zpool status b"), 0);
  EXPECT_EQ(h.runner.count("zpool status c"), 1);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_scrub_last_duration_seconds", {{"target", "a"}}), 120);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", {{"target", "b"}}), 1);
  EXPECT_NEAR(r.metrics.value("fsaudit_scrub_progress_ratio", {{"target", "b"}}), 0.1111, 1e-4);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", {{"target", "c"}}), 0);

  // Not zpool status output: the names come from `zpool list`, each pool is asked on its own.
  h.runner.answer("zpool status", "something else entirely\n");
  h.runner.answer("zpool list -H -o name", "c\n");
  r = h.run(p);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(h.runner.count("zpool list -H -o name"), 1);
  EXPECT_EQ(h.runner.count("zpool status c"), 2);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_running", {{"target", "c"}}));
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_running", {{"target", "a"}}));

  // A zpool that hangs is killed on its timeout and not asked again: the run says so.
  fsaudit::CommandResult hung;
  hung.timed_out = true;
  h.runner.answer("zpool status", hung);
  r = h.run(p);
  EXPECT_EQ(r.outcome, fsaudit::Outcome::not_applicable);
  EXPECT_NE(r.reason.find("zpool status"), std::string::npos) << r.reason;
  EXPECT_EQ(h.runner.count("zpool list -H -o name"), 1);
}

// The helper's side for a routed probe: its own config, state and runner on the same fixture host,
// answering through the real verb handler (handle_scrub_helper_request).
struct FakeHelper {
  Host& host;
  FakeRunner runner;
  config::Config own;
  std::vector<std::string> requests;
  FakeHelper(Host& h, const std::string& yaml) : host(h) {
    own = config::parse_config("state_dir: " + (h.dir / "helper-state").string() + "\n" + yaml, "helper.yaml");
    own.host = h.host;
    own.tools = h.tools;
    emulate_zpool_status(runner);
  }
  HelperTransport transport() {
    return [this](const std::string& req, std::chrono::milliseconds) -> Result<std::string> {
      requests.push_back(req);
      auto out = handle_scrub_helper_request(req, own, runner, 65534, 65534);  // the daemon, not root
      if (!out) return err("not a scrub verb");
      return out->substr(0, out->find('\n'));
    };
  }
};

// One scenario twice: the probe acting itself, and the same probe routed through the helper (as an
// unprivileged fsauditd with `canary.helper`): the same decisions, metrics and state files, and the
// routed daemon runs no scrub command itself.
TEST(ScrubProbe, ThroughTheHelperTheSameStateAndMetricsAsInProcess) {
  const std::string yaml = "scrub:\n  spread: 0\n  io_load_threshold: 0\n  window: \"Sat 01:00-02:00\"\n";
  auto cfg = cfg_from(yaml);
  Host direct, routed;
  FakeHelper helper(routed, yaml);
  auto script = [](FakeRunner& r, const std::string& scan) {
    r.answer("zpool list -H -o name", "tank\n");
    r.answer("zpool status tank", status("tank", scan));
    r.answer("zpool scrub tank", "");
    r.answer("zpool scrub -p tank", "", 2, "invalid option 'p'\nusage:\n\tscrub [-s] <pool> ...\n");
    r.answer("zpool scrub -s tank", "");
  };
  auto both = [&](const std::string& scan) {
    script(direct.runner, scan);
    script(helper.runner, scan);
    // The routed daemon observes with its own runner, and may not act with it.
    routed.runner.answer("zpool list -H -o name", "tank\n");
    routed.runner.answer("zpool status tank", status("tank", scan));
  };
  ScrubProbe in_process(cfg.scrub, cfg.targets);
  ScrubProbe via_helper(cfg.scrub, cfg.targets);
  in_process.set_tz_offset(0);
  via_helper.set_tz_offset(0);
  via_helper.set_helper_transport(helper.transport());
  auto same = [&](const char* step) {
    auto a = direct.run(in_process);
    auto b = routed.run(via_helper);
    EXPECT_EQ(a.outcome, b.outcome) << step;
    EXPECT_EQ(metrics::serialize(a.metrics), metrics::serialize(b.metrics)) << step;
    EXPECT_EQ(read_file(direct.state / "scrub/zfs_tank.state").value_or("?"),
              read_file(routed.state / "scrub/zfs_tank.state").value_or("!"))
        << step;
    for (const auto& c : routed.runner.calls) EXPECT_EQ(c.rfind("zpool scrub", 0), std::string::npos) << step << ": " << c;
    return a;
  };
  both("  scan: none requested\n");
  auto r = same("start");
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "tank"}, {"code", "start"}}));
  EXPECT_EQ(helper.runner.count("zpool scrub tank"), 1);
  ASSERT_EQ(helper.requests.size(), 1u);
  EXPECT_EQ(helper.requests[0], R"({"target":"tank","verb":"scrub-start"})");
  // Running at the window's end: zfs-fuse's zpool cannot pause, so both cancel and learn it.
  both("  scrub: scrub in progress for 0h59m, 80.00% done, 0h15m to go\n");
  direct.clock.advance(std::chrono::minutes(61));
  routed.clock.advance(std::chrono::minutes(61));
  r = same("window end");
  EXPECT_EQ(helper.runner.count("zpool scrub -s tank"), 1);
  EXPECT_EQ(direct.runner.count("zpool scrub -s tank"), 1);
  EXPECT_NE(read_file(routed.state / "scrub/zfs_tank.state").value_or("").find("pause_unsupported=1"), std::string::npos);
  both("  scan: scrub canceled on Sat Nov 18 02:01:05 2023\n");
  direct.clock.advance(std::chrono::seconds(30));
  routed.clock.advance(std::chrono::seconds(30));
  r = same("canceled");
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", "tank"}, {"result", "canceled"}}), 1);
}

// A start that fails because its tool is not on the host (the runner's not_installed) marks the target
// unsupported; one whose message merely says "not found" (a device zpool cannot find) is an ordinary
// failure, retried later. The same in process and through the helper, whose answer carries the kind.
TEST(ScrubProbe, OnlyAToolNotInstalledMarksTheTargetUnsupported) {
  const std::string yaml = "scrub:\n  spread: 0\n  io_load_threshold: 0\n";
  auto cfg = cfg_from(yaml);
  auto script = [](FakeRunner& r, bool installed) {
    r.answer("zpool list -H -o name", "tank\n");
    r.answer("zpool status tank", status("tank", "  scan: none requested\n"));
    if (installed) r.answer("zpool scrub tank", "", 1, "cannot scrub tank: device not found\n");
    else r.missing("zpool scrub tank");
  };
  for (bool routed : {false, true}) {
    for (bool installed : {false, true}) {
      SCOPED_TRACE(std::string(routed ? "through the helper, " : "in process, ") +
                   (installed ? "a device not found" : "zpool not installed"));
      Host h;
      FakeHelper helper(h, yaml);
      script(h.runner, installed);
      script(helper.runner, installed);
      ScrubProbe p(cfg.scrub, cfg.targets);
      if (routed) p.set_helper_transport(helper.transport());
      auto r = h.run(p);
      EXPECT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
      EXPECT_EQ((routed ? helper.runner : h.runner).count("zpool scrub tank"), 1);
      auto st = TargetState::parse(read_file(h.state / "scrub/zfs_tank.state").value_or(""));
      EXPECT_NE(st.last_attempt_error.find(installed ? "device not found" : "zpool: not found in PATH"), std::string::npos)
          << st.last_attempt_error;
      if (installed) {
        EXPECT_EQ(st.unsupported_reason, "");
        EXPECT_EQ(st.unsupported_since, 0);
      } else {
        EXPECT_EQ(st.unsupported_reason, st.last_attempt_error);
        EXPECT_GT(st.unsupported_since, 0);
      }
    }
  }
}

// A detached job the helper starts (btrfs `scrub start -B`): the daemon records the helper's job,
// reads it from the helper's job directory (its watcher's lock says it lives, even where the
// daemon cannot see root's processes), and names it when it cancels; a job id the helper did not
// start is refused and nothing is canceled.
TEST(ScrubProbe, ThroughTheHelperTheDaemonFollowsAndCancelsTheHelpersJob) {
  Host h;
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "40 22 0:45 / /mnt/r1 rw,relatime shared:20 - btrfs /dev/loop7 rw\n");
  const std::string yaml = "scrub:\n  filesystems: [btrfs]\n  spread: 0\n  io_load_threshold: 0\n";
  auto cfg = cfg_from(yaml);
  h.tools["fsaudit-scrub-detach"] = "/bin/true";
  FakeHelper helper(h, yaml);
  helper.runner.handler = [](const std::vector<std::string>& argv) {
    if (!argv.empty() && argv[0] == "/bin/true") return FakeRunner::exited(0, "pid=4242\n");
    return FakeRunner::not_found(argv.empty() ? "" : argv[0]);
  };
  const std::string status_cmd = "btrfs scrub status -d -R /mnt/r1";
  const std::string running = testing::fixture("written/btrfs/scrub-status-running-large-fs-progs-6.17.txt");
  helper.runner.answer(status_cmd, btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  h.runner.answer(status_cmd, btrfs_status("\tno stats available\n", 0, 0, 0, 0));
  ScrubProbe p(cfg.scrub, cfg.targets);
  p.set_helper_transport(helper.transport());
  metrics::Labels l{{"target", "/mnt/r1"}, {"fs", "btrfs"}};
  auto r = h.run(p);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", "/mnt/r1"}, {"code", "start"}}));
  auto job_dir = helper.own.state_dir / "scrub/jobs/btrfs__mnt_r1";
  EXPECT_EQ(helper.runner.count("/bin/true --group 65534 " + job_dir.string() + " -- btrfs scrub start -B -R /mnt/r1"), 1);
  EXPECT_EQ(h.runner.count("/bin/true " + (h.state / "scrub/jobs/btrfs__mnt_r1").string() + " -- btrfs scrub start -B -R /mnt/r1"), 0);
  auto st = TargetState::parse(read_file(h.state / "scrub/btrfs__mnt_r1.state").value_or(""));
  EXPECT_EQ(st.job_pid, 4242);
  EXPECT_EQ(st.job_dir, job_dir.string());
  EXPECT_TRUE(st.running && st.by_us);
  // The helper's jobs are reachable (o+x) but not listable by others.
  struct stat sb {};
  ASSERT_EQ(::stat((helper.own.state_dir / "scrub/jobs").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 011, 011u);
  EXPECT_EQ(sb.st_mode & 04, 0u);

  // The watcher lives (its lock is held; no /proc entry the daemon could see): still running.
  std::filesystem::create_directories(job_dir);
  int lock = ::open((job_dir / "lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  h.clock.advance(std::chrono::seconds(5));
  r = h.run(p);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));

  // The daemon's record of the job is not the helper's: refused, nothing canceled.
  h.runner.answer(status_cmd, running);
  helper.runner.answer(status_cmd, running);
  helper.runner.answer("btrfs scrub cancel /mnt/r1", "");
  st = TargetState::parse(read_file(h.state / "scrub/btrfs__mnt_r1.state").value_or(""));
  st.job_pid = 5151;
  write_text(h.state / "scrub/btrfs__mnt_r1.state", st.serialize());
  ProbeContext ctx{h.host, h.runner, h.clock, h.tools, h.state, {}, h.clock.now() + std::chrono::seconds(20)};
  auto c = p.request("cancel", "/mnt/r1", ctx);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("the fsaudit helper refused scrub-cancel: job 5151 is not a scrub job started here for /mnt/r1 "
                           "(recorded: 4242)"),
            std::string::npos)
      << c.error();
  EXPECT_EQ(helper.runner.count("btrfs scrub cancel /mnt/r1"), 0);
  // Its own job: canceled by the helper, never by the daemon.
  st.job_pid = 4242;
  write_text(h.state / "scrub/btrfs__mnt_r1.state", st.serialize());
  c = p.request("cancel", "/mnt/r1", ctx);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(*c, "canceled the scrub of /mnt/r1");
  EXPECT_EQ(helper.requests.back(), R"({"job":"4242","target":"/mnt/r1","verb":"scrub-cancel"})");
  EXPECT_EQ(helper.runner.count("btrfs scrub cancel /mnt/r1"), 1);
  EXPECT_EQ(h.runner.count("btrfs scrub cancel /mnt/r1"), 0);
  ::close(lock);
}

// The real fsaudit-scrub-detach under a umask like the helper unit's (0077): the job directory and
// files are readable by the one group named with --group (the daemon's, as the helper passes it) and
// by nobody else, or by the owner alone without it; and the job reads as alive from its watcher's
// lock alone (no pid to look up in /proc), then as finished.
TEST(ScrubDetach, JobReadableByItsGroupOnlyAndAliveByItsLock) {
  testing::TempDir d("scrub-detach");
  auto dir = d / "job";
  ProcessRunner runner;
  CommandSpec spec;
  spec.argv = {FSAUDIT_SCRUB_DETACH_BINARY, "--group", std::to_string(::getegid()), dir.string(), "--", "sh", "-c",
               "echo scrubbing; sleep 2"};
  spec.timeout = std::chrono::seconds(60);
  mode_t old = ::umask(077);
  auto r = runner.run(spec);
  ::umask(old);
  ASSERT_TRUE(r.ok()) << r.describe();
  ASSERT_EQ(r.out.rfind("pid=", 0), 0u) << r.out;
  HostPaths nowhere = HostPaths::under(d.path());  // no /proc here: liveness must come from the lock
  auto job = read_job(nowhere, dir, 0);
  EXPECT_TRUE(job.alive);
  EXPECT_FALSE(job.finished);
  struct stat sb {};
  ASSERT_EQ(::stat(dir.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0750u);
  EXPECT_EQ(sb.st_gid, ::getegid());
  for (const char* f : {"output", "lock", "pid"}) {
    ASSERT_EQ(::stat((dir / f).c_str(), &sb), 0) << f;
    EXPECT_EQ(sb.st_mode & 0777, 0640u) << f;
    EXPECT_EQ(sb.st_gid, ::getegid()) << f;
  }
  for (int i = 0; i < 600 && !(job = read_job(nowhere, dir, 0)).finished; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(job.finished);
  EXPECT_FALSE(job.alive);
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_EQ(job.output, "scrubbing\n");
  ASSERT_EQ(::stat((dir / "status").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0640u);
  // A directory that is already there (planted, or the last job's left behind) is not reused.
  r = runner.run(spec);
  EXPECT_FALSE(r.ok()) << r.out;
  EXPECT_NE(r.err.find("must not exist yet"), std::string::npos) << r.err;
  // Without --group: the owner's alone.
  auto own_dir = d / "own";
  spec.argv = {FSAUDIT_SCRUB_DETACH_BINARY, own_dir.string(), "--", "true"};
  ASSERT_TRUE(runner.run(spec).ok());
  ASSERT_EQ(::stat(own_dir.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((own_dir / "output").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  spec.argv = {FSAUDIT_SCRUB_DETACH_BINARY, "--group", "-1", (d / "bad").string(), "--", "true"};
  EXPECT_EQ(runner.run(spec).exit_code, 2);
  // The watcher is gone: its lock is free, and a job without a status is not alive.
  std::filesystem::remove(dir / "status");
  EXPECT_FALSE(read_job(nowhere, dir, 0).alive);
}

// Somebody else's xfs_scrub / bcachefs scrub is found by the executable /proc/<pid>/exe names, and its
// arguments; kernel threads (no exe) are skipped without a read of their cmdline.
TEST(ScrubProcesses, FoundByExecutableAndArgumentsKernelThreadsSkipped) {
  testing::TempDir d("fsaudit-procs");
  auto proc = [&](int pid, const std::string& exe, const std::string& argv) {
    auto dir = d / "proc" / std::to_string(pid);
    std::filesystem::create_directories(dir);
    if (!exe.empty()) std::filesystem::create_symlink(exe, dir / "exe");  // a dangling link is enough to read
    testing::write_text(dir / "cmdline", argv);
  };
  using namespace std::string_literals;
  proc(1, "/usr/lib/systemd/systemd", "/sbin/init\0"s);
  proc(10, "", "/usr/sbin/xfs_scrub\0/mnt/x\0"s);           // no exe: a kernel thread, or gone; never read
  proc(20, "/usr/sbin/xfs_scrub (deleted)", "xfs_scrub\0-n\0/mnt/a\0"s);  // the package was upgraded under it
  proc(30, "/usr/bin/bcachefs", "bcachefs\0data\0scrub\0/mnt/b\0"s);
  proc(40, "/usr/bin/python3", "/usr/sbin/xfs_scrub\0/mnt/c\0"s);  // argv[0] says xfs_scrub; the exe does not
  HostPaths host = HostPaths::under(d.path());
  EXPECT_TRUE(process_running(host, "xfs_scrub", "/mnt/a"));
  EXPECT_FALSE(process_running(host, "xfs_scrub", "/mnt/x")) << "a process without an exe link is not looked at";
  EXPECT_FALSE(process_running(host, "xfs_scrub", "/mnt/c"));
  EXPECT_FALSE(process_running(host, "xfs_scrub", "/mnt/b"));
  EXPECT_TRUE(process_running(host, "bcachefs", "/mnt/b", "scrub"));
  EXPECT_FALSE(process_running(host, "bcachefs", "/mnt/b", "rereplicate"));
  EXPECT_FALSE(process_running(host, "bcachefs", "/mnt/a"));
}

// Kernel threads are remembered from pass to pass (9,000 loop devices are 9,000 readlinks a pass saved),
// but only while every listing shows them: a PID that went away and came back is looked at again, the
// whole table is read afresh every KernelThreadMemo::kRecheck, and a start looks afresh whatever the memo says.
TEST(ScrubProcesses, KernelThreadsAreRememberedOnlyWhileEveryListingShowsThem) {
  testing::TempDir d("fsaudit-procs-memo");
  auto proc = [&](int pid, const std::string& exe, const std::string& argv) {
    auto dir = d / "proc" / std::to_string(pid);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    if (!exe.empty()) std::filesystem::create_symlink(exe, dir / "exe");
    testing::write_text(dir / "cmdline", argv);
  };
  using namespace std::string_literals;
  for (int pid : {10, 11, 12}) proc(pid, "", "");  // kernel threads: no exe
  proc(20, "/usr/sbin/xfs_scrub", "xfs_scrub\0-b\0/mnt/a\0"s);
  HostPaths host = HostPaths::under(d.path());
  FakeClock clock;
  ProcessRunner runner;
  ToolPaths tools;
  KernelThreadMemo memo;
  auto pass = [&](const std::string& mount) {
    ProbeContext ctx{host, runner, clock, tools, d.path(), {}, clock.now() + std::chrono::seconds(20)};
    DriverEnv env{ctx, d / "jobs", "", "", 0};
    env.kernel_threads = &memo;
    return process_running(env, "xfs_scrub", mount);
  };
  EXPECT_TRUE(pass("/mnt/a"));
  EXPECT_EQ(memo.pids, (std::unordered_set<std::string>{"10", "11", "12"}));
  EXPECT_EQ(memo.skipped, 0u) << "the first listing reads every PID";

  clock.advance(std::chrono::seconds(30));
  std::filesystem::remove_all(d / "proc" / "10");  // exited
  EXPECT_TRUE(pass("/mnt/a"));
  EXPECT_EQ(memo.skipped, 2u) << "11 and 12 were not read again";
  EXPECT_EQ(memo.pids, (std::unordered_set<std::string>{"11", "12"})) << "10 is forgotten";

  clock.advance(std::chrono::seconds(30));
  proc(10, "/usr/sbin/xfs_scrub", "xfs_scrub\0-b\0/mnt/c\0"s);  // PID 10 reused by somebody's xfs_scrub
  EXPECT_TRUE(pass("/mnt/c")) << "a PID that went away is looked at again";

  // PID 11 reused with no listing in between that missed it: the memo hides it until the next full read,
  clock.advance(std::chrono::seconds(30));
  proc(11, "/usr/sbin/xfs_scrub", "xfs_scrub\0-b\0/mnt/d\0"s);
  EXPECT_FALSE(pass("/mnt/d"));
  // ... a start looks afresh and refuses,
  {
    ProbeContext ctx{host, runner, clock, tools, d.path(), {}, clock.now() + std::chrono::seconds(20)};
    DriverEnv env{ctx, d / "jobs", "", "", 0};
    env.kernel_threads = &memo;
    ScrubTarget t;
    t.name = t.mountpoint = "/mnt/d";
    t.fs = "xfs";
    TargetState st;
    auto started = xfs::make_scrub_driver()->start(t, st, env);
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error(), "xfs_scrub started by someone else is already running on /mnt/d");
    EXPECT_EQ(st.job_pid, 0) << "nothing started";
  }
  // ... and the full read every kRecheck finds it.
  clock.advance(KernelThreadMemo::kRecheck);
  EXPECT_TRUE(pass("/mnt/d"));
  EXPECT_EQ(memo.pids, (std::unordered_set<std::string>{"12"}));
}

// The same on this machine's /proc: a process this test starts is found by its executable and arguments.
TEST(ScrubProcesses, FindsARealProcessInProc) {
  // A duration no other process on the machine is likely to sleep: this test's own pid as the fraction.
  const std::string marker = "3600." + std::to_string(::getpid());
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sleep", "sleep", marker.c_str(), "1", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  HostPaths host;  // the real /proc
  bool found = false;
  for (int i = 0; i < 50 && !(found = process_running(host, "sleep", marker, "1")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(found);
  EXPECT_FALSE(process_running(host, "xfs_scrub", marker));
  EXPECT_FALSE(process_running(host, "sleep", marker, "2"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_FALSE(process_running(host, "sleep", marker, "1"));
}

}  // namespace
}  // namespace fsaudit::scrub
