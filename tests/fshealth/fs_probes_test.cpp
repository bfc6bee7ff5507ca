// ext4, XFS, md and bcachefs probes: parsers on real fixtures / captures, adapters on fixture trees.
#include <gtest/gtest.h>

#include "probes/bcachefs/bcachefs.hpp"
#include "probes/ext4/block_name.hpp"
#include "probes/ext4/ext4.hpp"
#include "probes/md/md.hpp"
#include "probes/xfs/xfs.hpp"
#include "tests/fshealth/fshealth_util.hpp"
#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

namespace fs = std::filesystem;
using testing::fixture;
using testing::fshealth_data;
using testing::fshealth_data_dir;

HostPaths tree(const std::string& rel) { return HostPaths::under(fshealth_data_dir() / rel); }

// ---- ext4 ----------------------------------------------------------------------------------

TEST(Ext4, ErrorsTreeFromTriggerFsError) {
  auto files = ext4::read_ext4_sysfs_files(fshealth_data_dir() / "ext4/tree-errors/sys/fs/ext4/loop1");
  auto s = ext4::parse_ext4_sysfs(files);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->errors_count, 1u);
  ASSERT_TRUE(s->first && s->last);
  EXPECT_EQ(s->first->time, 1795997445);
  EXPECT_EQ(s->first->function, "trigger_test_error");
  EXPECT_EQ(s->first->line, 129u);
  EXPECT_EQ(s->first->errcode, 5);
  EXPECT_EQ(s->last->function, "trigger_test_error");
  EXPECT_EQ(s->warning_count, 0u);
  // ext4_error() records EFSCORRUPTED (EXT4_ERR code 5); a bad inode checksum records EFSBADCRC (4).
  EXPECT_EQ(ext4::errno_name(5), "EFSCORRUPTED");
  EXPECT_EQ(ext4::errno_name(4), "EFSBADCRC");
  EXPECT_EQ(ext4::errno_name(2), "EIO");
  EXPECT_EQ(ext4::errno_name(0), "");
  EXPECT_EQ(ext4::errno_name(9999), "9999");
}

TEST(Ext4, CleanTreeHasNoErrorTimes) {
  auto s = ext4::parse_ext4_sysfs(ext4::read_ext4_sysfs_files(fshealth_data_dir() / "ext4/tree-clean/sys/fs/ext4/loop1"));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->errors_count, 0u);
  ASSERT_TRUE(s->first);
  EXPECT_EQ(s->first->time, 0);
  EXPECT_EQ(s->first->function, "");
  Target t{"/srv", "/srv", "ext4", "/dev/loop1", "", "", 7, 1};
  auto b = ext4::ext4_metrics(t, "loop1", *s);
  EXPECT_EQ(b.value("fsaudit_ext4_errors", {{"target", "/srv"}, {"device", "loop1"}}), 0);
  EXPECT_FALSE(b.has("fsaudit_ext4_first_error_timestamp_seconds"));
  EXPECT_FALSE(b.has("fsaudit_ext4_error_info"));
}

TEST(Ext4, MissingOrBadErrorsCount) {
  EXPECT_FALSE(ext4::parse_ext4_sysfs({}).ok());
  auto r = ext4::parse_ext4_sysfs({{"errors_count", "lots\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("lots"), std::string::npos);
}

TEST(Ext4Adapter, FindsDirectoryByMajorMinorAndReportsError) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree("ext4/tree-errors"), runner);
  auto probe = probes::make_ext4_probe(config::default_config());
  EXPECT_EQ(probe->name(), "ext4");
  // The source name says nothing (e.g. /dev/root); major:minor 7:1 leads to loop1 via sys/dev/block.
  Target t{"/", "/", "ext4", "/dev/root", "rw", "rw", 7, 1};
  ASSERT_TRUE(probe->applies_to(t));
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_errors", {{"target", "/"}, {"device", "loop1"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_last_error_timestamp_seconds"), 1795997445);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_error_info",
                            {{"which", "first"}, {"function", "trigger_test_error"}, {"line", "129"}, {"errcode", "EFSCORRUPTED"}}),
            1);
  EXPECT_TRUE(runner.calls.empty());
}

TEST(Ext4Adapter, UnknownDeviceIsAClearFailure) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree("ext4/tree-clean"), runner);
  auto r = probes::make_ext4_probe(config::default_config())
               ->run(Target{"/srv", "/srv", "ext4", "/dev/sdq9", "", "", 8, 9}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("sdq9"), std::string::npos) << r.reason;
}

// ---- XFS -----------------------------------------------------------------------------------

TEST(XfsHealth, NotCollectedIsNotAnError) {
  auto h = xfs::parse_spaceman_health(fixture("fshealth/xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_FALSE(h->collected);
  EXPECT_EQ(h->unhealthy(), 0u);
}

TEST(XfsHealth, NotCollectedCapturedHere) {
  auto h = xfs::parse_spaceman_health(fshealth_data("xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
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
                0, fshealth_data("xfs/spaceman-health-not-collected-xfsprogs-6.1.txt"));
  testing::ContextHolder c(tree("xfs/tree"), runner);
  auto probe = probes::make_xfs_probe(config::default_config());
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
  runner.answer("xfs_spaceman -c health /data", "", 1, fshealth_data("xfs/spaceman-health-shutdown-eio-xfsprogs-6.1.txt"));
  testing::ContextHolder c(tree("xfs/tree"), runner);
  auto r = probes::make_xfs_probe(config::default_config())
               ->run(Target{"/data", "/data", "xfs", "/dev/loop1", "", "", 7, 1}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_xfs_shutdown", {{"target", "/data"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_xfs_health_collected"));
}

TEST(XfsAdapter, MissingToolFails) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree("xfs/tree"), runner);
  auto r = probes::make_xfs_probe(config::default_config())
               ->run(Target{"/data", "/data", "xfs", "/dev/loop1", "", "", 7, 1}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("xfs_spaceman"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("not found"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_xfs_error_max_retries"));  // sysfs part still published
}

// ---- md ------------------------------------------------------------------------------------

md::Mdstat mdstat(const std::string& name) {
  auto r = md::parse_mdstat(fshealth_data("md/" + name));
  EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error());
  return r.ok() ? *r : md::Mdstat{};
}

TEST(Mdstat, Raid1Healthy) {
  auto s = mdstat("mdstat-raid1-healthy.txt");
  EXPECT_EQ(s.personalities, std::vector<std::string>{"raid1"});
  ASSERT_EQ(s.arrays.size(), 1u);
  const auto& a = s.arrays[0];
  EXPECT_EQ(a.name, "md0");
  EXPECT_TRUE(a.active);
  EXPECT_EQ(a.level, "raid1");
  ASSERT_EQ(a.members.size(), 2u);
  EXPECT_EQ(a.members[0].name, "sdb1");
  EXPECT_EQ(a.members[0].slot, 1);
  EXPECT_FALSE(a.members[0].faulty);
  EXPECT_EQ(a.blocks_kib, 976630464u);
  EXPECT_EQ(a.super_version, "1.2");
  EXPECT_EQ(a.disks_expected, 2);
  EXPECT_EQ(a.disks_active, 2);
  EXPECT_EQ(a.status_map, "UU");
  EXPECT_FALSE(a.sync);
  auto b = md::md_metrics(md::Observation{s, {}});
  EXPECT_EQ(b.value("fsaudit_md_degraded", {{"device", "md0"}}), 0);
  EXPECT_EQ(b.value("fsaudit_md_sync_action", {{"device", "md0"}, {"state", "idle"}}), 1);
}

TEST(Mdstat, Raid1DegradedFaultyMember) {
  auto s = mdstat("mdstat-raid1-degraded-faulty.txt");
  ASSERT_EQ(s.arrays.size(), 1u);
  const auto& a = s.arrays[0];
  EXPECT_EQ(a.status_map, "U_");
  EXPECT_EQ(a.disks_active, 1);
  EXPECT_TRUE(a.members[0].faulty);
  EXPECT_FALSE(a.members[1].faulty);
  auto b = md::md_metrics(md::Observation{s, {}});
  EXPECT_EQ(b.value("fsaudit_md_degraded", {{"device", "md0"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_member_faulty", {{"device", "md0"}, {"member", "sdb1"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_member_faulty", {{"device", "md0"}, {"member", "sda1"}}), 0);
  EXPECT_EQ(b.value("fsaudit_md_disks", {{"device", "md0"}, {"state", "active"}}), 1);
}

TEST(Mdstat, Raid1RecoveryProgress) {
  auto s = mdstat("mdstat-raid1-recovery.txt");
  const auto& a = s.arrays.at(0);
  ASSERT_TRUE(a.sync);
  EXPECT_EQ(a.sync->action, "recovery");
  EXPECT_NEAR(a.sync->ratio, 0.085, 1e-12);
  EXPECT_EQ(a.sync->done_kib, 166106112u);
  EXPECT_EQ(a.sync->total_kib, 1953382464u);
  EXPECT_DOUBLE_EQ(*a.sync->finish_seconds, 166.5 * 60);
  EXPECT_DOUBLE_EQ(*a.sync->speed_bytes_per_second, 178832.0 * 1024);
  auto b = md::md_metrics(md::Observation{s, {}});
  EXPECT_NEAR(b.value("fsaudit_md_sync_progress_ratio", {{"device", "md0"}, {"action", "recovery"}}), 0.085, 1e-12);
  EXPECT_EQ(b.value("fsaudit_md_sync_action", {{"state", "recover"}}), 1);
}

TEST(Mdstat, Raid5Resync) {
  auto s = mdstat("mdstat-raid5-resync.txt");
  EXPECT_EQ(s.personalities.size(), 3u);
  const auto& a = s.arrays.at(0);
  EXPECT_EQ(a.level, "raid5");
  EXPECT_EQ(a.disks_expected, 3);
  EXPECT_EQ(a.status_map, "UUU");
  ASSERT_TRUE(a.sync);
  EXPECT_EQ(a.sync->action, "resync");
  EXPECT_NEAR(a.sync->ratio, 0.221, 1e-12);
  EXPECT_DOUBLE_EQ(*a.sync->finish_seconds, 36);
}

TEST(Mdstat, CheckDelayedInactiveAutoReadOnly) {
  auto s = mdstat("mdstat-check-delayed-inactive-autoreadonly.txt");
  ASSERT_EQ(s.arrays.size(), 4u);
  EXPECT_EQ(s.arrays[0].sync->action, "check");
  EXPECT_NEAR(s.arrays[0].sync->ratio, 0.72, 1e-12);
  EXPECT_EQ(s.arrays[1].name, "md2");
  EXPECT_EQ(s.arrays[1].level, "raid10");
  EXPECT_EQ(s.arrays[1].sync_pending, "DELAYED");
  EXPECT_FALSE(s.arrays[1].sync);
  EXPECT_EQ(s.arrays[2].name, "md127");
  EXPECT_FALSE(s.arrays[2].active);
  EXPECT_EQ(s.arrays[2].level, "");
  ASSERT_EQ(s.arrays[2].members.size(), 1u);
  EXPECT_TRUE(s.arrays[2].members[0].spare);
  EXPECT_FALSE(s.arrays[2].disks_expected);
  EXPECT_TRUE(s.arrays[3].auto_read_only);
  EXPECT_EQ(s.arrays[3].level, "raid1");
  EXPECT_TRUE(s.arrays[3].members[0].write_mostly);
  auto b = md::md_metrics(md::Observation{s, {}});
  EXPECT_EQ(b.value("fsaudit_md_array_active", {{"device", "md127"}}), 0);
  EXPECT_EQ(b.value("fsaudit_md_member_spare", {{"device", "md127"}, {"member", "sdi"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_arrays"), 4);
}

TEST(Mdstat, NotMdstatIsAnError) {
  EXPECT_FALSE(md::parse_mdstat("hello\n").ok());
  auto empty = md::parse_mdstat("Personalities : \nunused devices: <none>\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->arrays.empty());
}

TEST(MdAdapter, TreeDegradedRecoveryAndMismatches) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree("md/tree"), runner);
  auto probe = probes::make_md_probe(config::default_config());
  EXPECT_EQ(probe->name(), "md");
  EXPECT_EQ(probe->scope(), Scope::host);
  auto r = probe->run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  const auto& b = r.metrics;
  EXPECT_EQ(b.value("fsaudit_md_degraded", {{"device", "md0"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_degraded", {{"device", "md1"}}), 0);
  EXPECT_EQ(b.value("fsaudit_md_array_state", {{"device", "md0"}, {"state", "active"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_array_state", {{"device", "md1"}, {"state", "clean"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_sync_action", {{"device", "md0"}, {"state", "recover"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_sync_action", {{"device", "md1"}, {"state", "idle"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_mismatch_sectors", {{"device", "md1"}}), 128);
  EXPECT_EQ(b.value("fsaudit_md_mismatch_sectors", {{"device", "md0"}}), 0);
  EXPECT_NEAR(b.value("fsaudit_md_sync_progress_ratio", {{"device", "md0"}}), 0.085, 1e-12);
  EXPECT_EQ(b.value("fsaudit_md_array_info", {{"device", "md0"}, {"level", "raid1"}, {"super", "1.2"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_arrays"), 2);  // sda under sys/block is not an array
}

TEST(MdAdapter, NoMdstatIsNotApplicable) {
  // This machine's own kernel has no md driver; the same holds for an empty tree.
  testing::TempDir empty;
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(empty.path()), runner);
  auto r = probes::make_md_probe(config::default_config())->run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::not_applicable);
  EXPECT_NE(r.reason.find("mdstat"), std::string::npos);
}

// ---- bcachefs ------------------------------------------------------------------------------

TEST(Bcachefs, IoErrorsFixtureLayout) {
  auto e = bcachefs::parse_io_errors(fixture("written/bcachefs/sysfs-dev-io_errors.txt"));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->since_creation.at("read"), 4u);
  EXPECT_EQ(e->since_creation.at("write"), 0u);
  EXPECT_EQ(e->since_creation.at("checksum"), 9u);
  EXPECT_EQ(e->since_reset.at("checksum"), 2u);
  EXPECT_EQ(e->reset_age, "3 d");
  EXPECT_FALSE(bcachefs::parse_io_errors("read: 1\n").ok());
}

TEST(Bcachefs, CounterFixtures) {
  auto c = bcachefs::parse_counter(fixture("written/bcachefs/sysfs-counter-plain.txt"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->since_mount, 12);
  EXPECT_EQ(c->since_creation, 3047);
  auto u = bcachefs::parse_counter(fixture("written/bcachefs/sysfs-counter-bytes-units.txt"));
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_NEAR(u->since_mount, 512.0 * 1024 * 1024, 1e3);
  EXPECT_NEAR(u->since_creation, 3.25 * 1024 * 1024 * 1024 * 1024, 1e3);
  EXPECT_FALSE(bcachefs::parse_counter("nothing here\n").ok());
}

TEST(Bcachefs, StateAndErrorsFile) {
  EXPECT_EQ(bcachefs::parse_state("[rw] ro evacuating failed spare\n"), "rw");
  EXPECT_EQ(bcachefs::parse_state("rw ro [failed] spare"), "failed");
  EXPECT_EQ(bcachefs::parse_state("ro\n"), "ro");
  auto e = bcachefs::parse_sb_errors("ptr_to_missing_backpointer   4   2025-11-02 10:11:12\nbad\n");
  EXPECT_EQ(e.size(), 1u);
  EXPECT_EQ(e["ptr_to_missing_backpointer"], 4u);
  EXPECT_TRUE(bcachefs::error_counter("io_read_retry"));
  EXPECT_FALSE(bcachefs::error_counter("io_read"));
}

TEST(BcachefsAdapter, TreeTwoDevicesOneFailedWithChecksumErrors) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree("bcachefs/tree"), runner);
  auto probe = probes::make_bcachefs_probe(config::default_config());
  Target t{"/pool", "/pool", "bcachefs", "/dev/sdc:/dev/sdd", "", "", 0, 50};
  ASSERT_TRUE(probe->applies_to(t));
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  const auto& b = r.metrics;
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_errors", {{"device", "sdc"}, {"kind", "checksum"}}), 11);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_errors", {{"device", "sdc"}, {"kind", "read"}}), 6);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_errors", {{"device", "sdd"}, {"kind", "checksum"}}), 17);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_state", {{"device", "sdc"}, {"state", "rw"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_state", {{"device", "sdd"}, {"state", "failed"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_state", {{"device", "sdd"}, {"state", "rw"}}), 0);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_info", {{"device", "sdd"}, {"label", "hdd.hdd2"}, {"dev", "dev-1"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_errors", {{"error", "ptr_to_missing_backpointer"}}), 4);
  EXPECT_EQ(b.value("fsaudit_bcachefs_errors", {{"error", "btree_node_read_error"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_error_events_total", {{"counter", "io_read_retry"}}), 218);
  EXPECT_FALSE(b.has("fsaudit_bcachefs_error_events_total", {{"counter", "io_read"}}));
  // replicas=2 but sdd failed: one copy left, nothing to repair from.
  EXPECT_EQ(b.value("fsaudit_filesystem_data_redundancy", {{"target", "/pool"}, {"fs", "bcachefs"}}), 0);
  EXPECT_EQ(b.value("fsaudit_bcachefs_data_replicas"), 2);
}

TEST(BcachefsAdapter, SingleReplicaAndUnknownSource) {
  testing::TempDir d;
  fs::copy(fshealth_data_dir() / "bcachefs/tree", d.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  testing::write_text(d / "sys/fs/bcachefs/a9da1e6e-d4e5-4717-a520-408c8af4b084/options/data_replicas", "1\n");
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(d.path()), runner);
  auto probe = probes::make_bcachefs_probe(config::default_config());
  auto r = probe->run(Target{"/pool", "/pool", "bcachefs", "/dev/sdd", "", "", 0, 50}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_filesystem_data_redundancy", {{"target", "/pool"}}), 0);
  auto none = probe->run(Target{"/other", "/other", "bcachefs", "/dev/nvme9n1", "", "", 0, 51}, c.ctx);
  ASSERT_EQ(none.outcome, Outcome::failed);
  EXPECT_NE(none.reason.find("/dev/nvme9n1"), std::string::npos) << none.reason;
}

}  // namespace
}  // namespace fsaudit
