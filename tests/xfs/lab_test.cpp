// Lab: XFS on loop devices, the probe called directly on the real host.
#include <gtest/gtest.h>

#include "probes/xfs/probe.hpp"
#include "tests/support/fs_lab.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit {
namespace {

using testing::kname;
using testing::must;
using testing::run_probe;

TEST(XfsLab, FreshHealthNotCollectedThenShutdownDetected) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-xfs-lab");
  testing::LoopDevice loop(dir.path(), "xfs.img", 300 << 20);
  ASSERT_TRUE(loop.ok());
  must({"mkfs.xfs", "-q", "-f", loop.device()});
  testing::Mount m(loop.device(), dir / "mnt", "xfs");
  ASSERT_TRUE(m.ok()) << m.error();
  auto probe = xfs::make_xfs_probe(config::default_config());
  auto r = run_probe(*probe, (dir / "mnt").string());
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  metrics::Labels l{{"target", (dir / "mnt").string()}, {"device", kname(loop.device())}};
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", l), 0);
  // No online scrub in this kernel and no runtime corruption yet: nothing collected.
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_health_collected", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_unhealthy_metadata", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_error_max_retries", {{"error", "EIO"}}), -1);

  // A forced shutdown, as after a fatal log I/O error.
  must({"xfs_io", "-x", "-c", "shutdown", (dir / "mnt").string()});
  r = run_probe(*probe, (dir / "mnt").string());
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", l), 1);
}

}  // namespace
}  // namespace fsaudit
