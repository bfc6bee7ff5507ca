// Many filesystems at once, on the real thing: 200 loop-device ext4 filesystems and a zfs-fuse pool
// with 200 datasets beside them. Every one of them is a target in the scrape, with its capacity and
// mount state, and the scrape is valid exposition.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <iostream>
#include <unistd.h>

#include "daemon/core/strings.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;

TEST(ScaleLab, FourHundredFilesystemsAreAllTargetsInTheScrape) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  constexpr int kLoops = 200, kDatasets = 200;
  TempDir dir("fsaudit-scale-lab");
  // One mkfs, then sparse copies: 200 mkfs runs would dominate the test's time.
  auto base = dir / "base.img";
  must({"truncate", "-s", "8M", base.string()});
  must({"mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0", base.string()});
  std::vector<std::unique_ptr<LoopDevice>> loops;
  std::vector<std::unique_ptr<Mount>> mounts;
  for (int i = 0; i < kLoops; ++i) {
    auto loop = std::make_unique<LoopDevice>(dir.path(), "fs" + std::to_string(i) + ".img", 8 << 20);
    ASSERT_TRUE(loop->ok()) << "loop device " << i;
    // The loop device has read nothing yet, so the copy under it is what it serves.
    must({"cp", "--sparse=always", base.string(), loop->backing().string()});
    auto m = std::make_unique<Mount>(loop->device(), dir / ("ext4/m" + std::to_string(i)), "ext4");
    loops.push_back(std::move(loop));
    ASSERT_TRUE(m->ok()) << m->error();
    mounts.push_back(std::move(m));
  }
  ZfsFuse zfs;
  ASSERT_TRUE(zfs.ok()) << zfs.error();
  auto vdev = dir / "pool.img";
  must({"truncate", "-s", "512M", vdev.string()});
  std::string pool = "fsauditscale" + std::to_string(::getpid());
  ZfsPool p(pool, {"-m", (dir / "zfs").string(), vdev.string()});
  ASSERT_TRUE(p.ok()) << p.error();
  for (int i = 0; i < kDatasets; ++i) must({"zfs", "create", pool + "/d" + std::to_string(i)});

  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                     "\ntargets:\n  include: [\"" + dir.path().string() + "/*\"]\n  fstypes: [ext4, fuse.zfs]\n"
                     "latency:\n  enabled: false\n"
                     "probes:\n  capacity: {interval: 5s, jitter: 1s}\n  mount: {interval: 5s, jitter: 1s}\n";
  DaemonProcess d(dir.path(), yaml, port);
  const double want = kLoops + kDatasets + 1;  // the pool's own root dataset is mounted too
  auto all_in = [&](const std::string& t) {
    if (fsaudit::testing::scrape_value(t, "fsaudit_targets") != want) return false;
    // Every target's capacity, mount state and stack signature are in (three probes, each on its
    // own cycle grid: the setup probe's first cycle may end after the other two's).
    double sized = 0, mounted = 0, stacked = 0;
    for (auto line : fsaudit::lines(t)) {
      if (line.rfind("fsaudit_filesystem_size_bytes{", 0) == 0) ++sized;
      if (line.rfind("fsaudit_filesystem_readonly{", 0) == 0) ++mounted;
      if (line.rfind("fsaudit_stack_info{", 0) == 0) ++stacked;
    }
    return sized >= want && mounted >= want && stacked >= want;
  };
  auto text = d.wait_for(all_in, 180);
  ASSERT_EQ(scrape_value(text, "fsaudit_targets"), want) << d.log();
  for (int i = 0; i < kLoops; ++i) {
    std::string t = (dir / ("ext4/m" + std::to_string(i))).string();
    EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", t}}), 1e6) << t;
    EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", {{"target", t}}), 0) << t;
    EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", {{"probe", "capacity"}, {"target", t}}))) << t;
  }
  for (int i = 0; i < kDatasets; ++i) {
    std::string t = (dir / ("zfs/d" + std::to_string(i))).string();
    EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", t}}), 0) << t;
    EXPECT_EQ(scrape_value(text, "fsaudit_stack_info", {{"target", t}, {"data_checksums", "on"}}), 1) << t;
  }
  EXPECT_EQ(text.find("fsaudit_probe_stuck{"), std::string::npos) << scrape_lines(text, "fsaudit_probe_stuck");
  // Valid exposition, as Prometheus will read it: promtool exits 1 on a parse error, 3 on lint
  // findings only (naming advice, printed here; not this test's subject).
  write_text(dir / "scrape.txt", text);
  auto check = run({"sh", "-c", "promtool check metrics < " + (dir / "scrape.txt").string()}, 60);
  EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 3) << check.exit_code << ": " << check.out << check.err;
  if (check.exit_code == 3) std::cout << "[lab] promtool lint: " << check.out << check.err;
  EXPECT_EQ(d.stop(10), 0) << d.log();
}
