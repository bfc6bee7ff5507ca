// Lab: a real ext4 on a loop device goes read-only, and the daemon's scrape says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"

using namespace fsaudit::testing;

namespace {
std::string config_for(int port, const std::filesystem::path& state, const std::filesystem::path& mnt) {
  return "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + state.string() +
         "\ntargets:\n  discover: false\n  explicit: [{path: " + mnt.string() +
         "}]\nprobes:\n  mount: {interval: 1s, jitter: 0s}\n  capacity: {interval: 1s, jitter: 0s}\n"
         // The latency sampler's open probe file would make `remount,ro` answer busy for a moment.
         "latency: {enabled: false}\n";
}
// No sample of the scrape starts with `prefix`.
bool none(const std::string& text, const std::string& prefix) {
  for (auto line : fsaudit::lines(text))
    if (line.rfind(prefix, 0) == 0) return false;
  return true;
}
}  // namespace

TEST(DaemonLab, AdminRemountReadOnlyShows) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-lab-ro");
  LoopDevice loop(dir.path(), "ext4.img", 32 << 20);
  ASSERT_TRUE(loop.ok());
  must({"mkfs.ext4", "-q", "-F", loop.device()});
  Mount m(loop.device(), dir / "mnt", "ext4");
  ASSERT_TRUE(m.ok()) << m.error();
  int port = free_port();
  DaemonProcess d(dir.path(), config_for(port, dir / "state", dir / "mnt"), port);
  const std::map<std::string, std::string> t{{"target", (dir / "mnt").string()}};
  auto text = d.wait_for_metric("fsaudit_filesystem_readonly", t, 30);
  ASSERT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 0) << d.log();
  ASSERT_TRUE(m.remount("ro"));
  text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_filesystem_readonly", t) == 1; }, 15);
  EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 1) << scrape_lines(text, "fsaudit_filesystem");
  EXPECT_EQ(d.stop(5), 0);
}

TEST(DaemonLab, KernelErrorRemountReadOnlyShows) {
  // errors=remount-ro plus ext4's own error trigger: the kernel itself remounts the filesystem
  // read-only, as after real metadata corruption.
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-lab-ro");
  LoopDevice loop(dir.path(), "ext4.img", 32 << 20);
  ASSERT_TRUE(loop.ok());
  must({"mkfs.ext4", "-q", "-F", loop.device()});
  Mount m(loop.device(), dir / "mnt", "ext4", "errors=remount-ro");
  ASSERT_TRUE(m.ok()) << m.error();
  int port = free_port();
  DaemonProcess d(dir.path(), config_for(port, dir / "state", dir / "mnt"), port);
  const std::map<std::string, std::string> t{{"target", (dir / "mnt").string()}};
  // The kernel log watcher's first run places it at the log's end: an error logged before it is
  // history, never counted. Wait for that run (a slow, sanitized build may take seconds to get there).
  auto text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_filesystem_readonly", t) == 0 &&
           !std::isnan(scrape_value(s, "fsaudit_kernel_log_lines_total"));
  }, 30);
  ASSERT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 0) << d.log();
  ASSERT_FALSE(std::isnan(scrape_value(text, "fsaudit_kernel_log_lines_total"))) << d.log();
  std::string dev = std::filesystem::path(loop.device()).filename();
  auto trigger = std::filesystem::path("/sys/fs/ext4") / dev / "trigger_fs_error";
  ASSERT_TRUE(std::filesystem::exists(trigger)) << "kernel lacks " << trigger;
  {
    std::ofstream f(trigger);
    f << "fsaudit lab test\n";
  }
  // The kernel does not announce this change of the mount table (the mount stays; its superblock
  // turns read-only), and the daemon read the table moments ago: its timed read would come only 30 s
  // later. The kernel's error report (the kernel log watcher, every 5 s) makes it read the table now.
  auto triggered = std::chrono::steady_clock::now();
  text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_filesystem_readonly", t) == 1; }, 45);
  EXPECT_LT(std::chrono::steady_clock::now() - triggered, std::chrono::seconds(15)) << "found by the timed read only";
  EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 1) << scrape_lines(text, "fsaudit_filesystem");
  EXPECT_EQ(d.stop(5), 0);
}

// A filesystem that is unmounted leaves the scrape (its jobs and their series go), and when it is
// mounted again its series come back in full: the daemon publishes a job's self series only when they
// change, so it must forget what it last said about a job that went away.
TEST(DaemonLab, UnmountedTargetLeavesTheScrapeAndComesBackWhole) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-lab-back");
  LoopDevice loop(dir.path(), "ext4.img", 32 << 20);
  ASSERT_TRUE(loop.ok());
  must({"mkfs.ext4", "-q", "-F", loop.device()});
  std::optional<Mount> m;
  m.emplace(loop.device(), dir / "mnt", "ext4");
  ASSERT_TRUE(m->ok()) << m->error();
  int port = free_port();
  const std::string cfg = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                          "\ntargets:\n  include: [\"" + (dir / "mnt").string() + "\"]\n  fstypes: [ext4]\n"
                          "probes:\n  mount: {interval: 1s, jitter: 0s}\n  capacity: {interval: 1s, jitter: 0s}\n"
                          "latency: {enabled: false}\n";
  DaemonProcess d(dir.path(), cfg, port);
  const std::map<std::string, std::string> cap{{"probe", "capacity"}, {"target", (dir / "mnt").string()}};
  const std::map<std::string, std::string> t{{"target", (dir / "mnt").string()}};
  // A per-filesystem probe that succeeds carries no fsaudit_probe_success series (issue 33's budget).
  auto text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_filesystem_size_bytes", t) > 0; }, 30);
  ASSERT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", t), 0) << d.log();
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", cap))) << scrape_lines(text, "fsaudit_probe_success");
  m.reset();  // unmounted: the kernel announces it, and the daemon drops the target within seconds
  auto gone_at = std::chrono::steady_clock::now();
  text = d.wait_for([&](const std::string& s) {
    return !s.empty() && std::isnan(scrape_value(s, "fsaudit_probe_success", cap)) &&
           std::isnan(scrape_value(s, "fsaudit_filesystem_size_bytes", t));
  }, 40);
  // Well inside the 30 s of the timed read: the announcement, not the timer, made it.
  EXPECT_LT(std::chrono::steady_clock::now() - gone_at, std::chrono::seconds(10));
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", cap))) << scrape_lines(text, "fsaudit_probe_success");
  m.emplace(loop.device(), dir / "mnt", "ext4");
  ASSERT_TRUE(m->ok()) << m->error();
  auto back_at = std::chrono::steady_clock::now();
  text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_filesystem_size_bytes", t) > 0 && scrape_value(s, "fsaudit_filesystem_readonly", t) == 0;
  }, 40);
  EXPECT_LT(std::chrono::steady_clock::now() - back_at, std::chrono::seconds(10));
  EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", t), 0) << d.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 0) << scrape_lines(text, "fsaudit_filesystem");
  EXPECT_TRUE(none(text, "fsaudit_probe_success{probe=\"capacity\"")) << scrape_lines(text, "fsaudit_probe_success");
  EXPECT_TRUE(none(text, "fsaudit_probe_success{probe=\"mount\"")) << scrape_lines(text, "fsaudit_probe_success");
  EXPECT_EQ(d.stop(5), 0);
}

// A per-filesystem probe's fsaudit_probe_success is a series only while the probe fails there: 0 with
// its reason while the ext4 probe cannot find the filesystem's sysfs directory (the daemon reads a
// sysfs without fs/ext4), gone when the directory is there again; the capacity probe on the same
// filesystem succeeds all along and never has one.
TEST(DaemonLab, PerFilesystemProbeSuccessIsASeriesOnlyWhileItFails) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-lab-success");
  LoopDevice loop(dir.path(), "ext4.img", 32 << 20);
  ASSERT_TRUE(loop.ok());
  must({"mkfs.ext4", "-q", "-F", loop.device()});
  Mount m(loop.device(), dir / "mnt", "ext4");
  ASSERT_TRUE(m.ok()) << m.error();
  // A sysfs of the daemon's own: the host's block and class trees, no fs/ext4 yet.
  const auto sys = dir / "sys";
  std::filesystem::create_directories(sys / "fs");
  for (const char* d : {"block", "class", "dev", "devices"}) std::filesystem::create_directory_symlink("/sys/" + std::string(d), sys / d);
  int port = free_port();
  const std::string mnt = (dir / "mnt").string();
  DaemonProcess d(dir.path(),
                  "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                      "\nhost: {sysfs: " + sys.string() + "}\ntargets:\n  discover: false\n  explicit: [{path: " + mnt +
                      "}]\nprobes:\n  capacity: {interval: 1s, jitter: 0s}\n  ext4: {interval: 1s, jitter: 0s}\n"
                      "latency: {enabled: false}\n",
                  port);
  const std::map<std::string, std::string> ext4{{"probe", "ext4"}, {"target", mnt}}, cap{{"probe", "capacity"}, {"target", mnt}};
  // Both probes' first runs: the ext4 probe's failure and the capacity probe's series.
  auto text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_probe_success", ext4) == 0 &&
           scrape_value(s, "fsaudit_filesystem_size_bytes", {{"target", mnt}}) > 0;
  }, 30);
  ASSERT_EQ(scrape_value(text, "fsaudit_probe_success", ext4), 0) << scrape_lines(text, "fsaudit_probe") << d.log();
  EXPECT_NE(scrape_lines(text, "fsaudit_probe_failure_info{probe=\"ext4\"").find("ext4"), std::string::npos)
      << scrape_lines(text, "fsaudit_probe_failure_info");
  EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", mnt}}), 0);
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", cap))) << scrape_lines(text, "fsaudit_probe_success");
  std::filesystem::create_directory_symlink("/sys/fs/ext4", sys / "fs/ext4");
  text = d.wait_for([&](const std::string& s) {
    return !s.empty() && std::isnan(scrape_value(s, "fsaudit_probe_success", ext4)) &&
           !std::isnan(scrape_value(s, "fsaudit_ext4_errors", {{"target", mnt}}));
  }, 30);
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", ext4))) << scrape_lines(text, "fsaudit_probe") << d.log();
  EXPECT_TRUE(none(text, "fsaudit_probe_failure_info{probe=\"ext4\"")) << scrape_lines(text, "fsaudit_probe_failure_info");
  EXPECT_EQ(scrape_value(text, "fsaudit_ext4_errors", {{"target", mnt}}), 0) << scrape_lines(text, "fsaudit_ext4");
  EXPECT_EQ(d.stop(5), 0);
}
