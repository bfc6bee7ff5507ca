// XFS probe: the xfs_spaceman health parser on captures, the geometry ioctls' health flags, the
// adapter on fixture trees and a fake runner. The adapter asks the kernel first (a helper process);
// its target here is a directory that is not XFS (the ioctl answers ENOTTY), so it falls back to
// the fake xfs_spaceman, as on a kernel without the health ioctls.
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "probes/xfs/health.hpp"
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
  auto b = xfs::xfs_metrics(t, o, true);
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

// A directory that exists and is no XFS mount point: the health ioctl there answers ENOTTY.
struct NotXfs {
  testing::TempDir dir{"fsaudit-xfs-not"};
  Target target() const { return Target{"/data", dir.path().string(), "xfs", "/dev/loop1", "", "", 7, 1}; }
  std::string spaceman() const { return "xfs_spaceman -c health " + dir.path().string(); }
};

TEST(XfsAdapter, FreshTreeErrorConfigAndNotCollected) {
  testing::FakeRunner runner;
  NotXfs nx;
  runner.answer(nx.spaceman(), "", 0, probe_fixture_text("xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto cfg = config::default_config();
  cfg.xfs.detail = "full";
  auto probe = xfs::make_xfs_probe(cfg);
  Target t = nx.target();
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
  // By default (xfs.detail: compact) the error configuration is read (an unreadable one fails the
  // probe) but not exported: 9 series per filesystem that no alert or dashboard reads (issue 33).
  auto lean = xfs::make_xfs_probe(config::default_config())->run(t, c.ctx);
  ASSERT_EQ(lean.outcome, Outcome::ok) << lean.reason;
  EXPECT_EQ(lean.metrics.value("fsaudit_xfs_unhealthy_metadata"), 0);
  for (const char* f : {"fsaudit_xfs_error_max_retries", "fsaudit_xfs_error_retry_timeout_seconds",
                        "fsaudit_xfs_error_fail_at_unmount", "fsaudit_xfs_health_collected"})
    EXPECT_FALSE(lean.metrics.has(f)) << f;
}

TEST(XfsAdapter, ShutdownFilesystemFromCapturedEio) {
  testing::FakeRunner runner;
  NotXfs nx;
  runner.answer(nx.spaceman(), "", 1, probe_fixture_text("xfs/spaceman-health-shutdown-eio-xfsprogs-6.1.txt"));
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto r = xfs::make_xfs_probe(config::default_config())->run(nx.target(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", {{"target", "/data"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_xfs_health_collected"));
}

TEST(XfsAdapter, MissingToolFails) {
  testing::FakeRunner runner;
  NotXfs nx;
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto cfg = config::default_config();
  cfg.xfs.detail = "full";
  auto r = xfs::make_xfs_probe(cfg)->run(nx.target(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  // Both sources are in the reason: the kernel's answer, then the fallback's.
  EXPECT_NE(r.reason.find("Inappropriate ioctl"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("xfs_spaceman"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("not found"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_xfs_error_max_retries"));  // sysfs part still published (xfs.detail: full)
}

// A path that is gone: the kernel's answer is the reason; xfs_spaceman is not tried (it cannot do
// better), so the fake runner, which knows no command, is never asked.
TEST(XfsAdapter, GoneMountPointFailsWithoutTheFallback) {
  testing::FakeRunner runner;
  testing::ContextHolder c(probe_fixture_tree("xfs/tree"), runner);
  auto r = xfs::make_xfs_probe(config::default_config())
               ->run(Target{"/data", "/nonexistent/fsaudit-xfs", "xfs", "/dev/loop1", "", "", 7, 1}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("No such file"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("xfs_spaceman"), std::string::npos) << r.reason;
}

// The ioctl reading lists what xfs_spaceman's report would: checked or sick structures only, in its
// wording, optional btrees only where the filesystem has them.
TEST(XfsGeometry, FlagsGiveSpacemansItems) {
  xfs::Geometry g;
  EXPECT_FALSE(xfs::health_from_geometry(g).collected);  // nothing checked: "not been collected"
  g.ags.resize(2);
  EXPECT_FALSE(xfs::health_from_geometry(g).collected);
  g.checked = 1u << 0;                                   // summary counters
  g.sick = 1u << 4;                                      // realtime bitmap, but no realtime volume: not listed
  g.ags[1].checked = (1u << 0) | (1u << 6) | (1u << 7);  // superblock, inode btree, free inode btree
  g.ags[1].sick = 1u << 6;
  auto h = xfs::health_from_geometry(g);
  ASSERT_TRUE(h.collected);
  ASSERT_EQ(h.items.size(), 3u);  // no finobt feature flag: the free inode btree is not listed
  EXPECT_EQ(h.items[0].scope, "filesystem");
  EXPECT_EQ(h.items[0].metadata, "summary counters");
  EXPECT_TRUE(h.items[0].healthy);
  EXPECT_EQ(h.items[1].scope, "ag");
  EXPECT_EQ(h.items[1].index, "1");
  EXPECT_EQ(h.items[1].metadata, "superblock");
  EXPECT_TRUE(h.items[1].healthy);
  EXPECT_EQ(h.items[2].metadata, "inode btree");
  EXPECT_FALSE(h.items[2].healthy);
  EXPECT_EQ(h.unhealthy(), 1u);
  g.flags = 1u << 17;  // finobt: now listed, healthy
  g.rtblocks = 100;    // a realtime volume: the sick realtime bitmap is listed
  h = xfs::health_from_geometry(g);
  ASSERT_EQ(h.items.size(), 5u);
  EXPECT_EQ(h.items[1].metadata, "realtime bitmap");
  EXPECT_FALSE(h.items[1].healthy);
  EXPECT_EQ(h.items[4].metadata, "free inode btree");
  EXPECT_EQ(h.unhealthy(), 2u);
}

TEST(XfsGeometry, WireRoundTripsAndEveryCutIsRefused) {
  xfs::Geometry g;
  g.flags = 7;
  g.sick = 1;
  g.checked = 3;
  g.rtblocks = 1ull << 40;
  g.ags = {{1, 2}, {3, 4}, {5, 6}};
  const auto bytes = xfs::encode_geometry(g);
  EXPECT_EQ(bytes.size(), 24u + 3 * 8);
  auto back = xfs::decode_geometry(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->flags, 7u);
  EXPECT_EQ(back->rtblocks, 1ull << 40);
  ASSERT_EQ(back->ags.size(), 3u);
  EXPECT_EQ(back->ags[2].sick, 5u);
  EXPECT_EQ(back->ags[2].checked, 6u);
  for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(xfs::decode_geometry(bytes.substr(0, n))) << n;
  EXPECT_FALSE(xfs::decode_geometry(bytes + "x"));
}

// Issue 32: an XFS error setting that is there but unreadable or not a number is a problem naming the
// file, not a setting left out; an absent one (older kernel) is left out silently.
TEST(XfsErrorConfig, UnreadableOrJunkSettingsAreProblemsAbsentIsSilent) {
  testing::TempDir dir("xfs-errcfg");
  std::filesystem::create_directories(dir / "error/metadata/EIO");
  std::filesystem::create_directories(dir / "error/metadata/ENOSPC");
  testing::write_text(dir / "error/fail_at_unmount", "1\n");
  testing::write_text(dir / "error/metadata/EIO/max_retries", "-1\n");
  testing::write_text(dir / "error/metadata/EIO/retry_timeout_seconds", "forever\n");
  std::filesystem::create_directories(dir / "error/metadata/ENOSPC/max_retries");  // read() fails: EISDIR
  auto c = xfs::read_error_config(dir.path());
  EXPECT_EQ(c.fail_at_unmount, std::optional<bool>(true));
  EXPECT_EQ(c.max_retries.at("EIO"), -1);
  EXPECT_FALSE(c.retry_timeout_seconds.count("EIO"));
  ASSERT_EQ(c.problems.size(), 2u);
  std::string all = c.problems[0] + "\n" + c.problems[1];
  EXPECT_NE(all.find("'forever'"), std::string::npos) << all;
  EXPECT_NE(all.find((dir / "error/metadata/ENOSPC/max_retries").string()), std::string::npos) << all;
  EXPECT_NE(all.find("errno " + std::to_string(EISDIR)), std::string::npos) << all;
  // ENOSPC/retry_timeout_seconds is absent: no problem for it.
  EXPECT_EQ(all.find("ENOSPC/retry_timeout_seconds"), std::string::npos) << all;
}

}  // namespace
}  // namespace fsaudit
