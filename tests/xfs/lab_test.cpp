// Lab: XFS on loop devices, the probe called directly on the real host.
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "daemon/core/strings.hpp"
#include "probes/xfs/health.hpp"
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
  auto cfg = config::default_config();
  cfg.xfs.detail = "full";  // the error configuration's series too
  auto probe = xfs::make_xfs_probe(cfg);
  auto r = run_probe(*probe, (dir / "mnt").string());
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  metrics::Labels l{{"target", (dir / "mnt").string()}, {"device", kname(loop.device())}};
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", l), 0);
  // No online scrub in this kernel and no runtime corruption yet: nothing collected.
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_health_collected", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_unhealthy_metadata", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_error_max_retries", {{"error", "EIO"}}), -1);
  // The probe reads health with the kernel's ioctls in a helper process, not xfs_spaceman: both say
  // the same, here and after online scrub marked structures checked.
  SystemClock clock;
  std::stop_source stop;
  auto direct = [&] {
    return xfs::read_health(capacity::shared_statfs_helpers(), (dir / "mnt").string(), stop.get_token(), clock,
                            clock.now() + std::chrono::seconds(30));
  };
  auto spaceman = [&] {
    auto sm = testing::run({"xfs_spaceman", "-c", "health", (dir / "mnt").string()});
    return xfs::parse_spaceman_health(sm.out + sm.err);
  };
  auto compare = [&](const char* when) {
    auto d = direct();
    ASSERT_TRUE(d.health) << when << ": " << d.error;
    auto s = spaceman();
    ASSERT_TRUE(s.ok()) << when << ": " << s.error();
    EXPECT_EQ(d.health->collected, s->collected) << when;
    ASSERT_EQ(d.health->items.size(), s->items.size()) << when;
    for (std::size_t i = 0; i < s->items.size(); ++i) {
      EXPECT_EQ(d.health->items[i].scope, s->items[i].scope) << when << " " << i;
      EXPECT_EQ(d.health->items[i].index, s->items[i].index) << when << " " << i;
      EXPECT_EQ(d.health->items[i].metadata, s->items[i].metadata) << when << " " << i;
      EXPECT_EQ(d.health->items[i].healthy, s->items[i].healthy) << when << " " << i;
    }
  };
  compare("fresh");
  if (testing::run({"xfs_scrub", "-n", (dir / "mnt").string()}).exit_code == 0) {
    compare("after xfs_scrub -n");
    r = run_probe(*probe, (dir / "mnt").string());
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_xfs_health_collected", l), 1);
  }

  // A forced shutdown, as after a fatal log I/O error: the ioctl answers EIO.
  must({"xfs_io", "-x", "-c", "shutdown", (dir / "mnt").string()});
  auto d = direct();
  EXPECT_FALSE(d.health);
  EXPECT_EQ(d.err, EIO) << d.error;
  r = run_probe(*probe, (dir / "mnt").string());
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", l), 1);
}

}  // namespace
}  // namespace fsaudit
