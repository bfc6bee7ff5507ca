// Lab: scrubs driven by an unprivileged fsauditd through the real fsaudit-helper, as under the
// default unit. The test (root) starts fsaudit-helper behind a unix socket it owns; the scrub probe
// runs in a child as `nobody` with `canary.helper` naming that socket, so it acts through the helper
// by the rule itself (not root, helper named). On a real loop btrfs with a throttled scrub: started
// on schedule (the helper's detached `scrub start -B`, which the daemon follows from the helper's
// job directory), paused at the window's end, resumed in the next window, finished; then started
// and canceled on an operator's request. And the helper refuses, to the same unprivileged caller, a
// target its own config does not scrub and a job it did not start.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "daemon/core/strings.hpp"
#include "probes/scrub/probe.hpp"
#include "tests/canary/helper_socket.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::scrub {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct Snapshot {
  std::string code;
  double running = NAN, paused = NAN, ok_runs = NAN, canceled_runs = NAN;
  bool ended = false;
};

class ScrubThroughHelperLab : public ::testing::Test {
 protected:
  void SetUp() override {
    FSAUDIT_REQUIRE_LAB_OR_SKIP();
    FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
    dev_ = std::make_unique<testing::LoopDevice>(dir_.path(), "h.img", 200ull << 20);
    ASSERT_TRUE(dev_->ok());
    testing::must({"mkfs.btrfs", "-q", "-f", dev_->device()});
    mnt_ = dir_ / "mnt";
    fs::create_directories(mnt_);
    mount_ = std::make_unique<testing::Mount>(dev_->device(), mnt_, "btrfs");
    ASSERT_TRUE(mount_->ok()) << mount_->error();
    testing::must({"dd", "if=/dev/urandom", "of=" + (mnt_ / "data").string(), "bs=1M", "count=32", "status=none"});
    testing::must({"sync"});
    std::string uuid(trim(testing::must({"blkid", "-s", "UUID", "-o", "value", dev_->device()}).out));
    auto limit = "/sys/fs/btrfs/" + uuid + "/devinfo/1/scrub_speed_max";
    FSAUDIT_LAB_NEEDS(testing::lab_path_missing(limit, "btrfs scrub throttling, to keep a scrub running (Linux >= 5.14)"));
    testing::write_text(limit, "1m\n");  // ~32 s for 32 MiB: still running when the window ends, even under ASan
    // The daemon's state is its user's; the helper's is root's alone (0700, as StateDirectory= makes it).
    fs::create_directories(dir_ / "dstate");
    ASSERT_EQ(::chown((dir_ / "dstate").c_str(), nobody_.uid, nobody_.gid), 0);
    fs::create_directories(dir_ / "helper-state");
    ::chmod((dir_ / "helper-state").c_str(), 0700);
    yaml_ = "state_dir: " + (dir_ / "dstate").string() + "\ndbus_address: none\ntargets: {include: [" + mnt_.string() +
            "]}\ntools: {fsaudit-scrub-detach: " FSAUDIT_SCRUB_DETACH_BINARY "}\n"
            "scrub:\n  filesystems: [btrfs]\n  spread: 0\n  io_load_threshold: 0\n  window: \"daily 01:00-02:00\"\n"
            "  at_window_end: pause\ncanary: {helper: " +
            (dir_ / "helper.sock").string() + "}\n";
    cfg_path_ = testing::trusted_config(dir_, yaml_);
    helper_ = std::make_unique<testing::HelperSocket>(
        dir_.path(), std::vector<std::string>{FSAUDIT_HELPER_BINARY, "--config", cfg_path_.string(), "--state-dir",
                                              (dir_ / "helper-state").string(), "--allow-user", nobody_.name});
    ASSERT_TRUE(helper_->ok());
  }
  void TearDown() override {
    if (mount_ && mount_->ok()) testing::run({"btrfs", "scrub", "cancel", mnt_.string()});  // never leave one running
    // The helper's detached `scrub start -B` ends with the cancel; wait for its watcher to record it.
    for (int i = 0; i < 300 && !helper_jobs_done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    helper_.reset();
    mount_.reset();
    dev_.reset();
  }
  bool helper_jobs_done() {
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir_ / "helper-state/scrub/jobs", ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      if (!fs::exists(it->path() / "status")) return false;
    return true;
  }

  TempDir dir_{"fsaudit-scrub-helper-lab"};
  testing::Nobody nobody_;
  std::unique_ptr<testing::LoopDevice> dev_;
  std::unique_ptr<testing::Mount> mount_;
  std::unique_ptr<testing::HelperSocket> helper_;
  fs::path mnt_, cfg_path_;
  std::string yaml_;
};

// Everything below the fork runs as nobody; its checks come back as lines, "FAIL ..." for a failed one.
TEST_F(ScrubThroughHelperLab, UnprivilegedProbeStartsPausesResumesAndCancelsThroughTheHelper) {
  const std::string target = mnt_.string();
  auto log = testing::run_as(nobody_.uid, nobody_.gid, [&]() -> std::string {
    std::string out;
    auto check = [&](bool ok, const std::string& what) { out += (ok ? "ok   " : "FAIL ") + what + "\n"; };
    config::Config cfg;
    try {
      cfg = config::load_config_file(cfg_path_.string());
    } catch (const std::exception& e) {
      return std::string("FAIL config: ") + e.what() + "\n";
    }
    check(::geteuid() != 0 && actions_via_helper(cfg.canary.helper, ::geteuid()), "not root, helper named: acts through it");
    auto probe = make_scrub_probe(cfg);
    auto* p = dynamic_cast<ScrubProbe*>(probe.get());
    p->set_tz_offset(0);
    FakeClock clock{WallTime(std::chrono::seconds(1700266200))};  // Sat 2023-11-18 01:10 UTC: in the window
    ProcessRunner runner;
    auto ctx = [&] {
      return ProbeContext{cfg.host, runner, clock, cfg.tools, cfg.state_dir, {}, clock.now() + std::chrono::seconds(60)};
    };
    metrics::Labels l{{"target", target}, {"fs", "btrfs"}};
    auto snap = [&](const ProbeResult& r) {
      Snapshot s;
      for (const char* c : {"start", "running", "pause", "paused", "resume", "cancel", "not_due", "outside_window",
                            "retry_wait", "observe_failed", "busy", "concurrency", "unsupported"})
        if (r.metrics.has("fsaudit_scrub_decision_info", {{"target", target}, {"code", c}})) s.code = c;
      s.running = r.metrics.value("fsaudit_scrub_running", l);
      s.paused = r.metrics.value("fsaudit_scrub_paused", l);
      // A result's series appears at its first run: absent is none yet.
      auto runs = [&](const char* result) {
        metrics::Labels lr{{"target", target}, {"result", result}};
        return r.metrics.has("fsaudit_scrub_runs_total", lr) ? r.metrics.value("fsaudit_scrub_runs_total", lr) : 0.0;
      };
      s.ok_runs = runs("ok");
      s.canceled_runs = runs("canceled");
      s.ended = r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l);
      out += "     code=" + s.code + " running=" + std::to_string(s.running) + " paused=" + std::to_string(s.paused) +
             " ok=" + std::to_string(s.ok_runs) + " canceled=" + std::to_string(s.canceled_runs) +
             (r.reason.empty() ? "" : " reason=" + r.reason) + "\n";
      return s;
    };
    auto run = [&] {
      auto c = ctx();
      return snap(p->run(Target::host(), c));
    };
    auto state = [&] {
      return TargetState::parse(read_file(cfg.state_dir / "scrub" / (std::string("btrfs_") + [&] {
                                            std::string k;
                                            for (char ch : target)
                                              k += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
                                            return k;
                                          }() + ".state"))
                                    .value_or(""));
    };
    // On schedule: started by the helper; the daemon records the helper's job.
    auto s = run();
    check(s.code == "start" && s.running == 1, "due in the window: started");
    auto st = state();
    check(st.job_pid > 0 && st.job_dir.rfind((dir_ / "helper-state/scrub/jobs").string(), 0) == 0,
          "the daemon follows the helper's job " + std::to_string(st.job_pid) + " in " + st.job_dir);
    check(read_file(fs::path(st.job_dir) / "pid").ok(), "the helper's job directory is readable by the daemon");
    for (int i = 0; i < 240 && (s = run()).code != "running"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    check(s.code == "running" && s.running == 1, "observed running (status through the helper, job by its lock)");
    // The window ends: paused through the helper (btrfs: cancel, position kept).
    clock.advance(std::chrono::hours(1));
    s = run();
    check(s.code == "pause", "window end: paused");
    for (int i = 0; i < 240 && (s = run()).code != "paused"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    check(s.code == "paused" && s.paused == 1 && s.running == 0 && !s.ended, "paused, not ended");
    // The next day's window: resumed through the helper, then finished.
    clock.advance(std::chrono::hours(23));
    s = run();
    check(s.code == "resume" && s.running == 1, "next window: resumed");
    for (int i = 0; i < 240 && !s.ended; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      clock.advance(std::chrono::milliseconds(500));
      s = run();
    }
    check(s.ended && s.ok_runs == 1 && s.canceled_runs == 0 && s.running == 0, "finished: one completed run");
    // An operator's start and cancel (fsauditctl scrub start|cancel reaches Probe::request).
    auto request = [&](const std::string& action) {
      auto c = ctx();
      return p->request(action, target, c);
    };
    auto started = request("start");
    check(started && *started == "started the scrub of " + target, "request start: " + (started ? *started : started.error()));
    for (int i = 0; i < 240 && (s = run()).running != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    check(s.running == 1, "the requested scrub runs");
    auto canceled = request("cancel");
    check(canceled && *canceled == "canceled the scrub of " + target,
          "request cancel: " + (canceled ? *canceled : canceled.error()));
    for (int i = 0; i < 240 && !(s.canceled_runs == 1 && s.running == 0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      s = run();
    }
    check(s.canceled_runs == 1 && s.running == 0 && s.ok_runs == 1, "canceled: counted once");
    out += "END\n";
    return out;
  });
  EXPECT_NE(log.find("END\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("FAIL"), std::string::npos) << log;
  // As root: btrfs itself says the last scrub was canceled; the helper made the jobs (root's).
  auto st = testing::run({"btrfs", "scrub", "status", mnt_.string()});
  EXPECT_NE(st.out.find("aborted"), std::string::npos) << st.out;
  struct stat sb {};
  ASSERT_EQ(::stat((dir_ / "helper-state/scrub/jobs").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_uid, 0u);
  EXPECT_EQ(sb.st_mode & 0777, 0711u);
  // The job itself is readable by the caller's group alone (the daemon read it as nobody above).
  auto job = dir_ / "helper-state/scrub/jobs" / ScrubTarget{mnt_.string(), "btrfs", mnt_.string(), "", "", ""}.key();
  ASSERT_EQ(::stat(job.c_str(), &sb), 0) << job;
  EXPECT_EQ(sb.st_mode & 0777, 0750u);
  EXPECT_EQ(sb.st_gid, nobody_.gid);
  ASSERT_EQ(::stat((job / "output").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0640u);
  EXPECT_EQ(sb.st_gid, nobody_.gid);
  std::printf("%s", log.c_str());
}

TEST_F(ScrubThroughHelperLab, TheHelperRefusesWhatItsConfigDoesNotScrubAndJobsItDidNotStart) {
  const std::string sock = helper_->path();
  auto ask = [&](const std::map<std::string, std::string>& args) {
    return testing::run_as(nobody_.uid, nobody_.gid, [&] {
      std::map<std::string, std::string> a = args;
      auto verb = a["verb"];
      a.erase("verb");
      auto r = helper_call(sock, verb, a, std::chrono::seconds(120));
      return r ? std::string("ok") : r.error();
    });
  };
  auto out = ask({{"verb", "scrub-start"}, {"target", "/"}});
  EXPECT_NE(out.find("no scrub target named '/'; scrub targets: " + mnt_.string()), std::string::npos) << out;
  out = ask({{"verb", "scrub-start"}, {"target", dir_.path().string()}});
  EXPECT_NE(out.find("no scrub target named"), std::string::npos) << out;
  out = ask({{"verb", "scrub-cancel"}, {"target", mnt_.string()}, {"job", "1"}});
  EXPECT_NE(out.find("job 1 is not a scrub job started here for " + mnt_.string() + " (recorded: none)"), std::string::npos)
      << out;
  out = ask({{"verb", "scrub-start"}, {"target", mnt_.string()}, {"job", "1"}});
  EXPECT_NE(out.find("unknown key \"job\""), std::string::npos) << out;
  // Nothing was started by any of that.
  auto st = testing::run({"btrfs", "scrub", "status", mnt_.string()});
  EXPECT_NE(st.out.find("no stats available"), std::string::npos) << st.out;
  // The helper's own job, once it started one, is the only one it cancels.
  out = ask({{"verb", "scrub-start"}, {"target", mnt_.string()}});
  EXPECT_EQ(out, "ok");
  out = ask({{"verb", "scrub-cancel"}, {"target", mnt_.string()}, {"job", "1"}});
  EXPECT_NE(out.find("job 1 is not a scrub job started here"), std::string::npos) << out;
  // (TearDown cancels the running scrub as root.)
}

}  // namespace
}  // namespace fsaudit::scrub
