// Lab: the real fsauditd scrapes what the filesystem probes see on loop-device filesystems.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "daemon/core/strings.hpp"
#include "tests/support/fs_lab.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit {
namespace {

namespace fs = std::filesystem;
using testing::DaemonProcess;
using testing::must;
using testing::run;
using testing::ScrubStatusFileCleanup;
using testing::scrape_lines;
using testing::scrape_value;

using testing::kname;

std::string config_for(int port, const fs::path& state, const std::vector<fs::path>& mounts) {
  std::string explicit_list;
  for (const auto& m : mounts) explicit_list += (explicit_list.empty() ? "" : ", ") + ("{path: " + m.string() + "}");
  return "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + state.string() +
         "\ntargets:\n  discover: false\n  explicit: [" + explicit_list +
         "]\nprobes:\n"
         "  mount: {interval: 1s, jitter: 0s}\n"
         "  btrfs: {interval: 1s, jitter: 0s, timeout: 10s}\n"
         "  xfs: {interval: 1s, jitter: 0s}\n"
         "  ext4: {interval: 1s, jitter: 0s}\n"
         "  kernel_log: {interval: 1s, jitter: 0s}\n"
         "kernel_log:\n  source: kmsg\n";
}

TEST(FilesystemsDaemonLab, BtrfsRaid1CorruptionShowsInScrapeAndKernelLog) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-fsh-daemon");
  testing::LoopDevice a(dir.path(), "a.img", 128 << 20), b(dir.path(), "b.img", 128 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", a.device(), b.device()});
  ScrubStatusFileCleanup cleanup(a.device());
  auto mnt = dir / "mnt";
  std::optional<testing::Mount> m(std::in_place, a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();
  const std::string marker = "FSAUDIT-DAEMON-LAB-" + std::to_string(::getpid()) + "-BLOCK";
  std::string data;
  for (int i = 0; i < 4; ++i) data += testing::pattern_block(marker + std::to_string(i));
  std::ofstream(mnt / "data.bin", std::ios::binary) << data;
  must({"sync", "-f", (mnt / "data.bin").string()});
  m.reset();
  auto offs = testing::find_offsets(a.device(), marker + "1-0;");
  ASSERT_EQ(offs.size(), 1u);
  ASSERT_TRUE(testing::overwrite(a.device(), offs[0], std::string(4096, 'X')));
  m.emplace(a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();

  int port = testing::free_port();
  DaemonProcess d(dir.path(), config_for(port, dir / "state", {mnt}), port);
  const std::map<std::string, std::string> dev_a{
      {"target", mnt.string()}, {"device", kname(a.device())}, {"kind", "corruption"}};
  const std::map<std::string, std::string> dev_b{
      {"target", mnt.string()}, {"device", kname(b.device())}, {"kind", "corruption"}};
  // The stack model's margin: a whole raid1 survives one member failure.
  const std::map<std::string, std::string> margin{{"target", mnt.string()}, {"fs", "btrfs"}};
  auto text = d.wait_for_metric("fsaudit_redundancy_margin", margin, 90);
  ASSERT_EQ(scrape_value(text, "fsaudit_redundancy_margin", margin), 1) << scrape_lines(text, "fsaudit_redundancy_margin")
                                                                          << d.log();
  // No error counted yet: by default (btrfs.detail: compact) a counter at 0 is no series, and whether
  // data repairs is the stack's layout (fsaudit_stack_info), not a series.
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_btrfs_device_errors", dev_a))) << scrape_lines(text, "fsaudit_btrfs");
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_filesystem_data_redundancy", margin)));
  // The kernel log watcher must be reading before the corruption is hit.
  d.wait_for_metric("fsaudit_kernel_log_source_info", {}, 90);
  DaemonProcess::sleep_ms(1500);

  for (int i = 0; i < 8; ++i)
    run({"dd", "if=" + (mnt / "data.bin").string(), "of=/dev/null", "bs=64k", "iflag=direct", "status=none"});
  text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_btrfs_device_errors", dev_a) >= 1; }, 10);
  if (!(scrape_value(text, "fsaudit_btrfs_device_errors", dev_a) >= 1)) {
    // No reader landed on the bad mirror: a scrub reads both copies.
    must({"btrfs", "scrub", "start", "-B", mnt.string()});
    text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_btrfs_device_errors", dev_a) >= 1; }, 90);
  }
  EXPECT_GE(scrape_value(text, "fsaudit_btrfs_device_errors", dev_a), 1) << scrape_lines(text, "fsaudit_btrfs_device_errors")
                                                                      << "\n" << d.log();
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_btrfs_device_errors", dev_b))) << scrape_lines(text, "fsaudit_btrfs_device_errors");

  // The kernel log watcher counted the checksum failure for the same device.
  const std::map<std::string, std::string> klog{{"device", kname(a.device())}, {"kind", "checksum"}};
  text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_kernel_errors_total", klog) >= 1; }, 90);
  EXPECT_GE(scrape_value(text, "fsaudit_kernel_errors_total", klog), 1) << scrape_lines(text, "fsaudit_kernel_errors_total")
                                                                       << "\n" << d.log();
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_kernel_errors_total",
                                      {{"device", kname(b.device())}, {"kind", "checksum"}})) ||
              scrape_value(text, "fsaudit_kernel_errors_total", {{"device", kname(b.device())}, {"kind", "checksum"}}) == 0)
      << scrape_lines(text, "fsaudit_kernel_errors_total");
  std::cout << "[lab] daemon scrape:\n" << scrape_lines(text, "fsaudit_btrfs_device_errors")
            << scrape_lines(text, "fsaudit_kernel_errors_total");
  const auto durations = scrape_lines(text, "fsaudit_probe_duration_seconds");
  for (const auto& line : lines(durations))
    if (line.find("probe=\"btrfs\"") != std::string_view::npos) std::cout << "[lab] " << line << "\n";
  EXPECT_EQ(d.stop(60), 0) << d.log();
}

TEST(FilesystemsDaemonLab, XfsAndExt4HaveNoDataChecksumsAndAreHealthy) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-fsh-daemon");
  testing::LoopDevice x(dir.path(), "xfs.img", 300 << 20), e(dir.path(), "ext4.img", 64 << 20);
  ASSERT_TRUE(x.ok() && e.ok());
  must({"mkfs.xfs", "-q", "-f", x.device()});
  must({"mkfs.ext4", "-q", "-F", e.device()});
  testing::Mount mx(x.device(), dir / "xfs", "xfs"), me(e.device(), dir / "ext4", "ext4");
  ASSERT_TRUE(mx.ok()) << mx.error();
  ASSERT_TRUE(me.ok()) << me.error();
  int port = testing::free_port();
  DaemonProcess d(dir.path(), config_for(port, dir / "state", {dir / "xfs", dir / "ext4"}), port);
  const std::map<std::string, std::string> tx{{"target", (dir / "xfs").string()}};
  const std::map<std::string, std::string> te{{"target", (dir / "ext4").string()}};
  auto text = d.wait_for(
      [&](const std::string& s) {
        return !std::isnan(scrape_value(s, "fsaudit_stack_info", tx)) && !std::isnan(scrape_value(s, "fsaudit_stack_info", te)) &&
               !std::isnan(scrape_value(s, "fsaudit_ext4_errors", te)) &&
               !std::isnan(scrape_value(s, "fsaudit_xfs_shutdown", tx));
      },
      90);
  // Neither checksums data: the stack's info says so (there is no separate gauge, issue 33).
  EXPECT_EQ(scrape_value(text, "fsaudit_stack_info", {{"target", (dir / "xfs").string()}, {"fs", "xfs"}, {"data_checksums", "off"}}), 1)
      << d.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_stack_info", {{"target", (dir / "ext4").string()}, {"fs", "ext4"}, {"data_checksums", "off"}}), 1);
  EXPECT_EQ(text.find("fsaudit_filesystem_data_checksums"), std::string::npos);
  EXPECT_EQ(scrape_value(text, "fsaudit_ext4_errors", {{"target", (dir / "ext4").string()}, {"device", kname(e.device())}}), 0);
  EXPECT_EQ(scrape_value(text, "fsaudit_xfs_shutdown", {{"target", (dir / "xfs").string()}, {"device", kname(x.device())}}), 0);
  EXPECT_EQ(scrape_value(text, "fsaudit_xfs_unhealthy_metadata", tx), 0);
  EXPECT_EQ(text.find("fsaudit_xfs_health_collected"), std::string::npos) << "xfs.detail: full only";
  // Neither is redundant-by-checksum: no fsaudit_filesystem_data_redundancy for them.
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_filesystem_data_redundancy", tx)));

  // ext4 records an error: the scrape follows.
  std::ofstream(fs::path("/sys/fs/ext4") / kname(e.device()) / "trigger_fs_error") << "fsaudit daemon lab\n";
  text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_ext4_errors", te) == 1; }, 90);
  EXPECT_EQ(scrape_value(text, "fsaudit_ext4_errors", te), 1) << scrape_lines(text, "fsaudit_ext4") << "\n" << d.log();
  EXPECT_EQ(d.stop(60), 0) << d.log();
}

}  // namespace
}  // namespace fsaudit
