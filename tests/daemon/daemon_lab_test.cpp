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
  auto text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_probe_success", cap) == 1; }, 30);
  ASSERT_EQ(scrape_value(text, "fsaudit_probe_success", cap), 1) << d.log();
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
    return scrape_value(s, "fsaudit_probe_success", cap) == 1 && scrape_value(s, "fsaudit_filesystem_size_bytes", t) > 0;
  }, 40);
  EXPECT_LT(std::chrono::steady_clock::now() - back_at, std::chrono::seconds(10));
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_success", cap), 1) << scrape_lines(text, "fsaudit_probe_success") << d.log();
  EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", t), 0);
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_success", {{"probe", "mount"}, {"target", (dir / "mnt").string()}}), 1);
  EXPECT_EQ(d.stop(5), 0);
}
