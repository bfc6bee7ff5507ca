// The real zpool (zfs-fuse) with file vdevs whose paths hold blanks: the text output is read by the
// header's columns, so the vdevs keep their whole names, and the scrape passes promtool.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "daemon/core/clock.hpp"
#include "daemon/metrics/store.hpp"
#include "probes/zfs/probe.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::zfs {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(ZfsLabSpaces, VdevPathsWithBlanksKeepTheirNames) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  testing::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  testing::TempDir dir("fsaudit-zfs-spaced");
  fs::create_directories(dir / "zfs images");
  const fs::path a = dir / "zfs images" / "disk 1.img", b = dir / "zfs images" / "disk 2.img";
  for (const auto& p : {a, b}) testing::must({"truncate", "-s", std::to_string(96ull << 20), p.string()});
  const std::string name = "fsauditsp" + std::to_string(::getpid());
  testing::ZfsPool pool(name, {"-m", "none", "mirror", a.string(), b.string()});
  ASSERT_TRUE(pool.ok()) << pool.error();

  ProcessRunner runner;
  HostPaths host;
  SystemClock clock;
  ToolPaths tools;
  std::stop_source stop;
  ProbeContext ctx{host, runner, clock, tools, fs::temp_directory_path(), stop.get_token(), clock.now() + 30s};
  ZfsProbe probe;
  auto r = probe.run(Target::host(), ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  for (const auto& p : {a, b}) {
    EXPECT_EQ(r.metrics.value("fsaudit_zfs_vdev_state", {{"pool", name}, {"vdev", p.string()}, {"state", "online"}}), 1)
        << p;
    EXPECT_FALSE(r.metrics.has("fsaudit_zfs_vdev_errors", {{"pool", name}, {"vdev", p.string()}}))
        << p << ": no errors, no series by default";
  }
  EXPECT_FALSE(r.metrics.has("fsaudit_zfs_pool_redundant"));  // the stack model says it:
  EXPECT_GE(r.metrics.value("fsaudit_redundancy_designed", {{"target", name}, {"fs", "zfs"}}), 1);
  testing::write_text(dir / "scrape.txt", metrics::serialize(r.metrics));
  auto check = testing::run({"sh", "-c", "promtool check metrics < '" + (dir / "scrape.txt").string() + "'"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

}  // namespace
}  // namespace fsaudit::zfs
