// btrfs, md and kernel log inputs that are not garbage but were read wrong, and cut-short sources.
#include <gtest/gtest.h>

#include "probes/bcachefs/probe.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/kernel_log/classify.hpp"
#include "probes/md/probe.hpp"

namespace fsaudit {
namespace {

btrfs::SysfsFilesystem raid1(std::string profile, bool second_missing, bool second_has_stats) {
  btrfs::SysfsFilesystem f;
  f.fsid = "42fbdc2e-9cd9-4f99-aa0a-3dbca1ce9f49";
  f.member_names = {"sda1", "dm-0"};
  btrfs::SysfsDevice a;
  a.devid = 1;
  a.name = "sda1";
  a.errors = btrfs::DeviceErrors{};
  btrfs::SysfsDevice b;
  b.devid = 2;
  b.name = second_missing ? "" : "dm-0";
  b.missing = second_missing;
  if (second_has_stats) b.errors = btrfs::DeviceErrors{};
  else b.errors_problem = "cannot open error_stats";
  f.devices = {a, b};
  f.profiles = {{"data", profile, 1 << 30, 1 << 29}, {"metadata", profile, 1 << 28, 1 << 20}};
  return f;
}

Target btrfs_target() {
  Target t;
  t.name = "/srv";
  t.mountpoint = "/srv";
  t.fstype = "btrfs";
  t.source = "/dev/sda1";
  return t;
}

TEST(BtrfsNaming, DeviceStatsCountersCarryTheSameDevidAsSysfsSeries) {
  btrfs::Observation o;
  o.sysfs = raid1("raid1", false, false);
  // `btrfs device stats` printed /dev/mapper/crypt2, which the probe resolved to the kernel name dm-0.
  o.device_stats = std::vector<btrfs::DeviceStatsEntry>{{"dm-0", std::nullopt, {0, 0, 0, 7, 0}}};
  auto b = btrfs::btrfs_metrics(btrfs_target(), o);
  EXPECT_EQ(b.value("fsaudit_btrfs_device_errors", {{"device", "dm-0"}, {"kind", "corruption"}, {"devid", "2"}}), 7);
  EXPECT_FALSE(b.has("fsaudit_btrfs_device_errors", {{"devid", ""}}));
  EXPECT_EQ(btrfs::btrfs_metrics(btrfs_target(), o, true).value("fsaudit_btrfs_device_missing", {{"device", "dm-0"}, {"devid", "2"}}), 0);
}

TEST(BtrfsRedundancy, Raid1WithAMissingMemberHasNoRedundancyLeft) {
  btrfs::Observation o;
  o.sysfs = raid1("raid1", false, true);
  // A series with btrfs.detail: full (the stack's layout says it); fsaudit_redundancy_margin by default.
  EXPECT_FALSE(btrfs::btrfs_metrics(btrfs_target(), o).has("fsaudit_filesystem_data_redundancy"));
  EXPECT_EQ(btrfs::btrfs_metrics(btrfs_target(), o, true).value("fsaudit_filesystem_data_redundancy"), 1);
  o.sysfs = raid1("raid1", true, true);
  auto b = btrfs::btrfs_metrics(btrfs_target(), o, true);
  EXPECT_EQ(b.value("fsaudit_btrfs_device_missing", {{"devid", "2"}}), 1);
  EXPECT_EQ(b.value("fsaudit_filesystem_data_redundancy"), 0);
  // Three copies, one member gone: two copies left, still repairable.
  o.sysfs = raid1("raid1c3", true, true);
  EXPECT_EQ(btrfs::btrfs_metrics(btrfs_target(), o, true).value("fsaudit_filesystem_data_redundancy"), 1);
  o.sysfs = raid1("raid5", true, true);
  EXPECT_EQ(btrfs::btrfs_metrics(btrfs_target(), o, true).value("fsaudit_filesystem_data_redundancy"), 0);
  o.sysfs = raid1("raid6", true, true);
  EXPECT_EQ(btrfs::btrfs_metrics(btrfs_target(), o, true).value("fsaudit_filesystem_data_redundancy"), 1);
}

TEST(BcachefsRedundancy, AFailedMemberTakesAReplicaAway) {
  bcachefs::Filesystem f;
  f.uuid = "a9da1e6e-d4e5-4717-a520-408c8af4b084";
  f.devices = {{"dev-0", "sdc", "hdd.a", "rw", 1, bcachefs::IoErrors{}, ""},
               {"dev-1", "sdd", "hdd.b", "rw", 1, bcachefs::IoErrors{}, ""}};
  f.data_replicas = 2;
  Target t;
  t.name = "/pool";
  t.fstype = "bcachefs";
  EXPECT_EQ(bcachefs::bcachefs_metrics(t, f).value("fsaudit_filesystem_data_redundancy"), 1);
  f.devices[1].state = "failed";
  EXPECT_EQ(bcachefs::bcachefs_metrics(t, f).value("fsaudit_filesystem_data_redundancy"), 0);
  f.data_replicas = 3;
  EXPECT_EQ(bcachefs::bcachefs_metrics(t, f).value("fsaudit_filesystem_data_redundancy"), 1);
}

TEST(KernelLogNaming, BtrfsStateSuffixIsNotPartOfTheDevice) {
  auto e = kernel_log::classify(
      "BTRFS warning (device sdb1 state EA): checksum error at logical 298844160 on dev /dev/sdc1, physical "
      "1048576, root 5, inode 257, offset 0, length 4096, links 1 (path: a)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->fs_device, "sdb1");
  EXPECT_EQ(e->device, "sdc1");
  auto f = kernel_log::classify("BTRFS error (device sdb1 state E): bdev /dev/sdb1 errs: wr 0, rd 1, flush 0, corrupt 2, gen 0");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->fs_device, "sdb1");
  EXPECT_EQ(f->stats[3], 2u);
}

TEST(KernelLogNaming, MdUnrecoverableReadErrorIsCountedOnTheMember) {
  auto e = kernel_log::classify("md/raid1:md1: sdg1: unrecoverable I/O read error for block 2048");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, kernel_log::kind::unrepairable);
  EXPECT_EQ(e->device, "sdg1");
  EXPECT_EQ(e->fs_device, "md1");
  auto r5 = kernel_log::classify("md/raid:md0: read error not correctable (sector 2056 on sdb1).");
  ASSERT_TRUE(r5);
  EXPECT_EQ(r5->device, "sdb1");
  EXPECT_EQ(r5->fs_device, "md0");
}

TEST(KernelLogNaming, JunkBytesInADeviceTokenBecomeValidUtf8) {
  auto e = kernel_log::classify("BTRFS warning (device sd\xff\xfe): csum failed root 5 ino 257 off 0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->fs_device, "sd\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(MdstatComplete, CutShortIsAnError) {
  const std::string full =
      "Personalities : [raid1]\n"
      "md0 : active raid1 sdb1[1] sda1[0]\n"
      "      1046528 blocks super 1.2 [2/2] [UU]\n"
      "\n"
      "md1 : active raid1 sdd1[1](F) sdc1[0]\n"
      "      1046528 blocks super 1.2 [2/1] [U_]\n"
      "\n"
      "unused devices: <none>\n";
  ASSERT_TRUE(md::parse_mdstat(full).ok());
  auto cut = md::parse_mdstat(full.substr(0, full.find("md1 :")));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().find("cut short"), std::string::npos) << cut.error();
  EXPECT_FALSE(md::parse_mdstat("").ok());
}

}  // namespace
}  // namespace fsaudit
