// XFS probe: the xfs_spaceman health parser on captures, the adapter on fixture trees and a fake runner.
#include <gtest/gtest.h>

#include "probes/xfs/probe.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

using testing::fixture;
using testing::probe_fixture_text;
using testing::probe_fixture_tree;

TEST(XfsHealth, NotCollectedIsNotAnError) {
  auto h = xfs::parse_spaceman_health(fixture("xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_FALSE(h->collected);
  EXPECT_EQ(h->unhealthy(), 0u);
}

TEST(XfsHealth, NotCollectedCapturedHere) {
  auto h = xfs::parse_spaceman_health(probe_fixture_text("xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_FALSE(h->collected);
}

// Lines in the format of xfsprogs spaceman/health.c report_sick(): "%s %s: %s\n" (no real capture
// with verdicts exists: online scrub is not in this kernel).
TEST(XfsHealth, VerdictLinesByScope) {
  auto h = xfs::parse_spaceman_health(
      "filesystem summary counters: ok\n"
      "filesystem user quota: ok\n"
      "AG 0 superblock: ok\n"
      "AG 0 inode btree: unhealthy\n"
      "AG 1 inode btree: ok\n"
      "AG 3 free space by length btree: unhealthy\n"
      "rtgroup 2 realtime bitmap: unhealthy\n"
      "inode 133 directory: unhealthy\n"
      "/mnt/data/a file: name.txt file data: unhealthy\n");
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_TRUE(h->collected);
  ASSERT_EQ(h->items.size(), 9u);
  EXPECT_EQ(h->unhealthy(), 5u);
  EXPECT_EQ(h->items[0].scope, "filesystem");
  EXPECT_EQ(h->items[0].metadata, "summary counters");
  EXPECT_EQ(h->items[3].scope, "ag");
  EXPECT_EQ(h->items[3].index, "0");
  EXPECT_EQ(h->items[3].metadata, "inode btree");
  EXPECT_FALSE(h->items[3].healthy);
  EXPECT_EQ(h->items[5].metadata, "free space by length btree");
  EXPECT_EQ(h->items[6].scope, "rtgroup");
  EXPECT_EQ(h->items[7].scope, "inode");
  EXPECT_EQ(h->items[7].index, "133");
  EXPECT_EQ(h->items[8].scope, "path");
  EXPECT_EQ(h->items[8].index, "/mnt/data/a file: name.txt");
  EXPECT_EQ(h->items[8].metadata, "file data");

  Target t{"/x", "/x", "xfs", "/dev/sdb", "", "", 8, 16};
  xfs::Observation o;
  o.device = "sdb";
  o.health = *h;
  auto b = xfs::xfs_metrics(t, o);
  EXPECT_EQ(b.value("fsaudit_xfs_unhealthy_metadata", {{"target", "/x"}}), 5);
  EXPECT_EQ(b.value("fsaudit_xfs_health_unhealthy", {{"scope", "ag"}, {"metadata", "inode btree"}}), 1);
  EXPECT_EQ(b.value("fsaudit_xfs_health_unhealthy", {{"scope", "ag"}, {"metadata", "superblock"}}), 0);
  EXPECT_EQ(b.value("fsaudit_xfs_health_collected"), 1);
  EXPECT_EQ(b.value("fsaudit_xfs_shutdown"), 0);
}

TEST(XfsHealth, GarbageIsAnError) {
  auto h = xfs::parse_spaceman_health("xfs_spaceman: command \"health\" not found\n");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("not found"), std::string::npos);
}

TEST(XfsAdapter, FreshTreeErrorConfigAndNotCollected) {
  testing::FakeRunner runner;
  runner.answer("xfs_spaceman -c health /data", "",
                0, probe_fixture_text("xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto probe = xfs::make_xfs_probe(config::default_config());
  Target t{"/data", "/data", "xfs", "/dev/loop1", "", "", 7, 1};
  ASSERT_TRUE(probe->applies_to(t));
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  const auto& b = r.metrics;
  EXPECT_EQ(b.value("fsaudit_xfs_health_collected", {{"target", "/data"}, {"device", "loop1"}}), 0);
  EXPECT_EQ(b.value("fsaudit_xfs_shutdown"), 0);
  EXPECT_EQ(b.value("fsaudit_xfs_error_max_retries", {{"error", "EIO"}}), -1);
  EXPECT_EQ(b.value("fsaudit_xfs_error_max_retries", {{"error", "ENODEV"}}), 0);
  EXPECT_EQ(b.value("fsaudit_xfs_error_retry_timeout_seconds", {{"error", "default"}}), -1);
  EXPECT_EQ(b.value("fsaudit_xfs_error_fail_at_unmount"), 1);
}

TEST(XfsAdapter, ShutdownFilesystemFromCapturedEio) {
  testing::FakeRunner runner;
  runner.answer("xfs_spaceman -c health /data", "", 1, probe_fixture_text("xfs/spaceman-health-shutdown-eio-xfsprogs-6.1.txt"));
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto r = xfs::make_xfs_probe(config::default_config())
               ->run(Target{"/data", "/data", "xfs", "/dev/loop1", "", "", 7, 1}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", {{"target", "/data"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_xfs_health_collected"));
}

TEST(XfsAdapter, MissingToolFails) {
  testing::FakeRunner runner;
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto r = xfs::make_xfs_probe(config::default_config())
               ->run(Target{"/data", "/data", "xfs", "/dev/loop1", "", "", 7, 1}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("xfs_spaceman"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("not found"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_xfs_error_max_retries"));  // sysfs part still published
}

}  // namespace
}  // namespace fsaudit
