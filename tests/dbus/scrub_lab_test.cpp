// fsauditctl scrub start|pause|cancel over a private dbus-daemon, against a real (throttled) btrfs
// scrub on a loop device: start shows it running, pause shows it paused (btrfs keeps the position),
// start resumes it, cancel stops it; an unknown target gets a D-Bus error naming the scrub targets;
// a caller who may only read is refused. Text and --json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "daemon/core/strings.hpp"
#include "tests/support/private_bus.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::testing {
namespace {

using nlohmann::json;

class ScrubControlLab : public ::testing::Test {
 protected:
  void SetUp() override {
    FSAUDIT_REQUIRE_LAB_OR_SKIP();
    FSAUDIT_LAB_NEEDS(lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
    dev_ = std::make_unique<LoopDevice>(dir_.path(), "scrub.img", 200ull << 20);
    ASSERT_TRUE(dev_->ok());
    must({"mkfs.btrfs", "-q", "-f", dev_->device()});
    mnt_ = (dir_ / "mnt").string();
    std::filesystem::create_directories(mnt_);
    mount_ = std::make_unique<Mount>(dev_->device(), mnt_, "btrfs");
    ASSERT_TRUE(mount_->ok()) << mount_->error();
    must({"dd", "if=/dev/urandom", "of=" + mnt_ + "/data", "bs=1M", "count=48", "status=none"});
    must({"sync"});
    std::string uuid(trim(must({"blkid", "-s", "UUID", "-o", "value", dev_->device()}).out));
    auto limit = "/sys/fs/btrfs/" + uuid + "/devinfo/1/scrub_speed_max";
    FSAUDIT_LAB_NEEDS(lab_path_missing(limit, "btrfs scrub throttling, to keep a scrub running long enough (Linux >= 5.14)"));
    write_text(limit, "1m\n");  // ~48 s for 48 MiB: running until the test pauses or cancels it

    bus_ = std::make_unique<PrivateBus>(dir_.path());
    ASSERT_FALSE(bus_->address().empty());
    int port = free_port();
    // observe_only: fsauditd never starts a scrub by itself here; only the operator's requests do.
    daemon_ = std::make_unique<DaemonProcess>(
        dir_.path(),
        "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir_ / "state").string() +
            "\ndbus_address: " + bus_->address() + "\ntargets:\n  include: [\"" + mnt_ +
            "\"]\nlatency: {enabled: false}\nscrub:\n  filesystems: [btrfs]\n  observe_only: true\n  io_load_threshold: 0\n",
        port);
    auto text = daemon_->wait_for_metric("fsaudit_scrub_decision_info", {{"target", mnt_}}, 120);
    ASSERT_NE(text.find("fsaudit_scrub_decision_info"), std::string::npos) << daemon_->log();
    for (int i = 0; i < 600 && ctl({"status"}).exit_code != 0; ++i) DaemonProcess::sleep_ms(100);
    // The metric can be served before the status that `scrub list` reads has this target's row
    // (seen under ASan on a loaded machine): wait for the row too.
    for (int i = 0; i < 600 && text_state().rfind("(no row", 0) == 0; ++i) DaemonProcess::sleep_ms(100);
  }
  void TearDown() override {
    if (mount_ && mount_->ok()) run({"btrfs", "scrub", "cancel", mnt_});  // never leave a scrub running
    daemon_.reset();
    bus_.reset();
    mount_.reset();
    dev_.reset();
  }
  Cmd ctl(std::vector<std::string> args, const std::string& as = "") {
    std::vector<std::string> argv;
    if (as == "adm") argv = {"setpriv", "--reuid=65534", "--regid=65534", "--groups=4"};
    argv.insert(argv.end(), {FSAUDITCTL_BINARY, "--bus", bus_->address()});
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, 120);
  }
  // This target's entry of `fsauditctl --json scrub list`.
  json scrub_entry() {
    auto r = ctl({"--json", "scrub", "list"});
    if (r.exit_code != 0) return json();
    for (const auto& e : json::parse(r.out))
      if (e["target"] == mnt_) return e["scrub"];
    return json();
  }
  // Waits (up to 120 s: the probe reruns every 30 s) until the target's scrub state is `state`.
  json wait_state(const std::string& state) {
    json e;
    for (int i = 0; i < 240; ++i) {
      e = scrub_entry();
      if (!e.is_null() && state == (e["running"].get<bool>() ? "running" : e["paused"].get<bool>() ? "paused" : "idle"))
        return e;
      DaemonProcess::sleep_ms(500);
    }
    ADD_FAILURE() << "scrub of " << mnt_ << " never became " << state << "; last: " << e.dump() << "\n"
                  << run({"btrfs", "scrub", "status", mnt_}).out << daemon_->log().substr(0, 4000);
    return e;
  }
  // The STATE column of this target's row in `fsauditctl scrub list`.
  std::string text_state() {
    auto r = ctl({"scrub", "list"});
    for (auto line : lines(r.out)) {
      auto f = split_ws(line);
      if (f.size() >= 3 && f[0] == mnt_) return std::string(f[2]);
    }
    return "(no row for " + mnt_ + " in:\n" + r.out + ")";
  }

  TempDir dir_{"fsaudit-scrub-ctl"};
  std::unique_ptr<LoopDevice> dev_;
  std::unique_ptr<Mount> mount_;
  std::unique_ptr<PrivateBus> bus_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string mnt_;
};

TEST_F(ScrubControlLab, StartPauseResumeCancelARealBtrfsScrub) {
  // Unknown target: a useful error, on the bus and from fsauditctl (exit 5).
  auto r = ctl({"scrub", "start", "/nowhere"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.err.find("no scrub target named '/nowhere'; scrub targets: " + mnt_), std::string::npos) << r.err;
  // Group adm may read, not change.
  r = ctl({"scrub", "start", mnt_}, "adm");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(text_state(), "idle");

  r = ctl({"scrub", "start", mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << daemon_->log().substr(0, 4000);
  EXPECT_NE(r.out.find("done: start " + mnt_ + ": started the scrub of " + mnt_), std::string::npos) << r.out;
  EXPECT_TRUE(wait_state("running")["running"].get<bool>());
  EXPECT_EQ(text_state(), "running");
  EXPECT_NE(run({"btrfs", "scrub", "status", mnt_}).out.find("running"), std::string::npos);
  EXPECT_NE(ctl({"scrub", "start", mnt_}).out.find("a scrub is already running on " + mnt_), std::string::npos);

  r = ctl({"--json", "scrub", "pause", mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto job = json::parse(r.out);
  EXPECT_EQ(job["state"], "done") << r.out;
  EXPECT_EQ(job["result"], "paused the scrub of " + mnt_) << r.out;
  auto paused = wait_state("paused");
  EXPECT_FALSE(paused["running"].get<bool>());
  EXPECT_EQ(text_state(), "paused");
  EXPECT_NE(run({"btrfs", "scrub", "status", mnt_}).out.find("aborted"), std::string::npos) << "btrfs pauses by canceling";

  r = ctl({"scrub", "start", mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resumed the scrub of " + mnt_), std::string::npos) << r.out;
  wait_state("running");

  r = ctl({"--json", "scrub", "cancel", mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["result"], "canceled the scrub of " + mnt_) << r.out;
  auto idle = wait_state("idle");
  EXPECT_FALSE(idle["paused"].get<bool>());
  EXPECT_EQ(text_state(), "idle");
  EXPECT_NE(run({"btrfs", "scrub", "status", mnt_}).out.find("aborted"), std::string::npos);
  auto scrape = daemon_->scrape();
  EXPECT_EQ(scrape_value(scrape, "fsaudit_scrub_runs_total", {{"target", mnt_}, {"result", "canceled"}}), 1) << scrape_lines(scrape, "fsaudit_scrub_runs_total");

  // Nothing left to cancel: the job fails and says why (exit 1).
  r = ctl({"scrub", "cancel", mnt_});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no scrub is running on " + mnt_), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fsaudit::testing
