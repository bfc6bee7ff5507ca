// Disk identity and the walk from a mount source down to whole disks, on the sysfs tree of
// tests/fixtures/disk/tree (made by make_tree.sh from the kernel's documented layout).
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "daemon/core/disk_identity.hpp"
#include "daemon/metrics/derive_label.hpp"
#include "daemon/metrics/label_value.hpp"
#include "daemon/metrics/store.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/disk/probe.hpp"
#include "probes/md/probe.hpp"
#include "probes/zfs/members.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::block {
namespace {

using V = std::vector<std::string>;

HostPaths tree() { return HostPaths::under(testing::fixtures_dir() / "disk" / "tree"); }

TEST(DiskWalk, PartitionsDmMdAndLoopEndAtWholeDisks) {
  auto h = tree();
  EXPECT_EQ(whole_disks(h, "sda1"), V{"sda"});
  EXPECT_EQ(whole_disks(h, "/dev/sda1"), V{"sda"});
  EXPECT_EQ(whole_disks(h, "sda"), V{"sda"});
  EXPECT_EQ(whole_disks(h, "/dev/disk/by-id/ata-ST4000DM004-2CV104_ZFN0ABCD-part1"), V{"sda"});
  EXPECT_EQ(whole_disks(h, "nvme0n1p3"), V{"nvme0n1"});
  // md through slaves/, md through md/dev-* only, LVM over md, crypt over an NVMe partition.
  EXPECT_EQ(whole_disks(h, "md0"), (V{"sda", "sdb"}));
  EXPECT_EQ(whole_disks(h, "md1"), V{"sdc"});
  EXPECT_EQ(whole_disks(h, "/dev/mapper/vg-root"), (V{"sda", "sdb"}));
  EXPECT_EQ(whole_disks(h, "/dev/mapper/crypt"), V{"nvme0n1"});
  EXPECT_EQ(whole_disks(h, "loop0"), V{"loop0"});
  EXPECT_EQ(disk_label(h, "dm-0"), "sda,sdb");
  EXPECT_EQ(disk_label(h, "sdb1"), "sdb");
}

TEST(DiskWalk, UnknownDevicesHaveNoDiskNotAGuess) {
  auto h = tree();
  EXPECT_EQ(whole_disks(h, "sdz1"), V{});
  EXPECT_EQ(whole_disks(h, "mirror-0"), V{});
  EXPECT_EQ(whole_disks(h, "/srv/vdev0.img"), V{});
  EXPECT_EQ(disk_label(h, "/dev/disk/by-id/gone"), "");
}

TEST(DiskIdentity, ReadsModelSerialWwnByIdAndBus) {
  auto h = tree();
  auto sda = identify(h, "sda");
  EXPECT_EQ(sda.model, "ST4000DM004-2CV104");
  EXPECT_EQ(sda.wwn, "naa.5000c500b1234567");
  EXPECT_EQ(sda.transport, "sata");
  ASSERT_EQ(sda.by_id.size(), 2u);
  EXPECT_EQ(sda.by_id[0], (h.dev("disk/by-id") / "ata-ST4000DM004-2CV104_ZFN0ABCD").string());
  auto nvme = identify(h, "nvme0n1");
  EXPECT_EQ(nvme.model, "Samsung SSD 970 EVO Plus 1TB");
  EXPECT_EQ(nvme.serial, "S4EWNX0N123456");
  EXPECT_EQ(nvme.wwn, "eui.0025388b71b0c0de");
  EXPECT_EQ(nvme.transport, "nvme");
  EXPECT_EQ(identify(h, "sdb").transport, "sas");
  EXPECT_EQ(identify(h, "sdc").transport, "usb");
  auto loop = identify(h, "loop0");
  EXPECT_EQ(loop.transport, "loop");
  EXPECT_EQ(loop.backing_file, "/srv/vdev0.img");
  EXPECT_EQ(loop.serial, "");
  // A partition is the drive its disk is: serial and WWN from the parent, by-id links its own.
  auto part = identify(h, "nvme0n1p3");
  EXPECT_EQ(part.serial, "S4EWNX0N123456");
  EXPECT_EQ(part.wwn, "eui.0025388b71b0c0de");
  EXPECT_TRUE(identify(h, "sda1").by_id.size() == 1);
}

// The disk probe asks about the same disks every 5 minutes: what sysfs says of a disk is kept while
// its diskseq (new on every attach) reads the same; the by-id links are the pass's own.
TEST(DiskIdentity, KeptWhileTheDiskseqIsTheSameAndReadAgainWhenItChanges) {
  testing::TempDir d;
  std::filesystem::copy(testing::fixtures_dir() / "disk" / "tree", d.path(),
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  auto h = HostPaths::under(d.path());
  auto sda_dir = std::filesystem::canonical(h.sys("class/block/sda"));
  testing::write_text(sda_dir / "diskseq", "7\n");
  const auto links = by_id_links(h);
  IdentityCache cache;
  auto first = cache.identify(h, "sda", links);
  EXPECT_EQ(first.model, identify(h, "sda").model);
  EXPECT_EQ(first.by_id, identify(h, "sda").by_id);
  EXPECT_EQ(cache.reads_saved(), 0u);
  // Another drive in the same slot would come with a new diskseq; with the same one, sysfs is not read.
  testing::write_text(sda_dir / "device" / "model", "REPLACED\n");
  auto kept = cache.identify(h, "sda", links);
  EXPECT_EQ(kept.model, "ST4000DM004-2CV104");
  EXPECT_EQ(kept.by_id, first.by_id);
  EXPECT_EQ(cache.reads_saved(), 1u);
  testing::write_text(sda_dir / "diskseq", "8\n");
  EXPECT_EQ(cache.identify(h, "sda", links).model, "REPLACED");
  EXPECT_EQ(cache.reads_saved(), 1u);
  // No diskseq (an older kernel): read every time.
  cache.identify(h, "nvme0n1", links);
  EXPECT_EQ(cache.identify(h, "nvme0n1", links).serial, "S4EWNX0N123456");
  EXPECT_EQ(cache.reads_saved(), 1u);
  // The by-id links come from the pass, not from the cache.
  EXPECT_TRUE(cache.identify(h, "sda", ByIdLinks{}).by_id.empty());
}

TEST(DiskProbe, OneInfoSeriesPerDiskWhateverSitsOnIt) {
  auto h = tree();
  auto mounts = read_mount_table(h);
  ASSERT_TRUE(mounts.ok()) << mounts.error();
  auto targets = select_targets(**mounts, TargetSelection{});
  auto disks = disk::disks_of_targets(h, targets);
  // / (LVM over md0) and /other (sda1) share sda; /data is crypt(nvme0n1p3) + sdc1; /boot md1 (sdc).
  ASSERT_EQ(disks.size(), 5u);
  EXPECT_EQ(disks["sda"], (std::set<std::string>{"/", "/other"}));
  EXPECT_EQ(disks["sdc"], (std::set<std::string>{"/boot", "/data"}));
  EXPECT_EQ(disks["nvme0n1"], (std::set<std::string>{"/data"}));
  EXPECT_EQ(disks["loop0"], (std::set<std::string>{"/srv/loop"}));
  EXPECT_EQ(disks.count("tank"), 0u);

  std::map<std::string, DiskIdentity> ids;
  for (const auto& [d, _] : disks) ids[d] = identify(h, d);
  auto b = disk::disk_metrics(disks, ids);
  std::size_t info = 0;
  for (const auto& f : b.families())
    if (f.name == "fsaudit_disk_info") info = f.metric.size();
  EXPECT_EQ(info, 5u);
  EXPECT_TRUE(b.has("fsaudit_disk_info", {{"disk", "sda"},
                                          {"by_id", "ata-ST4000DM004-2CV104_ZFN0ABCD"},
                                          {"model", "ST4000DM004-2CV104"},
                                          {"transport", "sata"}}));
  EXPECT_TRUE(b.has("fsaudit_disk_info", {{"disk", "nvme0n1"}, {"by_id", "nvme-Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0N123456"}}));
  EXPECT_TRUE(b.has("fsaudit_target_disk_info", {{"target", "/data"}, {"disk", "sdc"}}));
  // The USB bridge's serial is not UTF-8: the label is, with the bad bytes replaced.
  for (const auto& f : b.families())
    for (const auto& m : f.metric)
      for (const auto& l : m.label) EXPECT_TRUE(metrics::is_clean_label_value(l.value)) << l.name << "=" << l.value;
  EXPECT_TRUE(b.has("fsaudit_disk_info", {{"disk", "sdc"}, {"serial", "AB\xEF\xBF\xBD\xEF\xBF\xBD" "CD"}}));
}

// `zpool status tank` of the fixture tree's pool: a mirror of sda1 (by its by-id name) and sdb1.
constexpr const char* kTankStatus =
    "  pool: tank\n state: ONLINE\nconfig:\n\n\tNAME                                      STATE     READ WRITE CKSUM\n"
    "\ttank                                      ONLINE       0     0     0\n"
    "\t  mirror-0                                ONLINE       0     0     0\n"
    "\t    ata-ST4000DM004-2CV104_ZFN0ABCD-part1  ONLINE       0     0     0\n"
    "\t    sdb1                                  ONLINE       0     0     0\n\n"
    "errors: No known data errors\n";

// The disks under the targets are walked again only for a new mount table, after a run with a
// problem, and every 30 minutes: on the daemon's unchanged snapshot a run reuses the last walk (here
// seen as no second `zpool status`), with the same series.
TEST(DiskProbe, TheWalkIsReusedForTheSameMountTableUntilItChangesOrAgesOut) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree(), runner);
  runner.answer("zpool status tank", kTankStatus);
  auto table = read_mount_table(c.ctx.host);
  ASSERT_TRUE(table.ok()) << table.error();
  c.ctx.mounts = *table;
  config::Config cfg;
  auto probe = disk::make_disk_probe(cfg);
  auto first = probe->run(Target::host(), c.ctx);
  ASSERT_EQ(first.outcome, Outcome::ok) << first.reason;
  EXPECT_EQ(runner.count("zpool status tank"), 1);
  c.clock.advance(std::chrono::minutes(29));
  auto again = probe->run(Target::host(), c.ctx);
  EXPECT_EQ(runner.count("zpool status tank"), 1) << "walked again for the same mount table";
  EXPECT_EQ(metrics::serialize(again.metrics), metrics::serialize(first.metrics));
  // A new table (the same text, read again: the daemon hands a new snapshot only when it changed).
  c.ctx.mounts = *read_mount_table(c.ctx.host);
  auto fresh = probe->run(Target::host(), c.ctx);
  EXPECT_EQ(runner.count("zpool status tank"), 2);
  EXPECT_TRUE(fresh.metrics.has("fsaudit_target_disk_info", {{"target", "/tank"}, {"disk", "sdb"}}));
  c.clock.advance(std::chrono::minutes(29));
  (void)probe->run(Target::host(), c.ctx);
  EXPECT_EQ(runner.count("zpool status tank"), 2);
  c.clock.advance(std::chrono::minutes(2));  // 31 minutes after the last walk
  (void)probe->run(Target::host(), c.ctx);
  EXPECT_EQ(runner.count("zpool status tank"), 3);
}

// A pool's members as zpool prints them: the bare name of a by-id link (how most pools are built), a
// kernel name, a /dev path; a file vdev, an interior vdev and a gone member's GUID are no disk.
TEST(ZfsMembers, ZpoolNamesResolveToTheirDisks) {
  auto h = tree();
  EXPECT_EQ(zfs::member_device(h, "ata-ST4000DM004-2CV104_ZFN0ABCD-part1"),
            "/dev/disk/by-id/ata-ST4000DM004-2CV104_ZFN0ABCD-part1");
  EXPECT_EQ(zfs::member_device(h, "wwn-0x5000c500b1234567"), "/dev/disk/by-id/wwn-0x5000c500b1234567");
  EXPECT_EQ(zfs::member_device(h, "sdb1"), "sdb1");
  EXPECT_EQ(zfs::member_device(h, "/dev/sda1"), "/dev/sda1");
  EXPECT_EQ(zfs::member_device(h, "/srv/vdev0.img"), "");
  EXPECT_EQ(zfs::member_device(h, "mirror-0"), "");
  EXPECT_EQ(zfs::member_device(h, "12345678901234567890"), "");
  EXPECT_EQ(zfs::member_device(h, ""), "");

  // The /tank dataset's disks are its pool's members' (from `zpool status`), each named once.
  auto mounts = read_mount_table(h);
  ASSERT_TRUE(mounts.ok()) << mounts.error();
  auto targets = select_targets(**mounts, TargetSelection{});
  disk::PoolMembers pools{{"tank", {"mirror-0", "ata-ST4000DM004-2CV104_ZFN0ABCD-part1", "sdb1", "/srv/vdev0.img"}}};
  auto disks = disk::disks_of_targets(h, targets, pools);
  EXPECT_TRUE(disks["sda"].count("/tank"));
  EXPECT_TRUE(disks["sdb"].count("/tank"));
  for (const auto& [d, ts] : disks) {
    if (d == "sda" || d == "sdb") continue;
    EXPECT_FALSE(ts.count("/tank")) << d;
  }
  // Without the pool's members (zpool not asked or failed): no disk for the dataset, never a guess.
  auto none = disk::disks_of_targets(h, targets);
  for (const auto& [d, ts] : none) {
    EXPECT_FALSE(ts.count("/tank")) << d;
  }
}

// The disk probe asks zpool for the watched datasets' pools once per run; when it cannot, the run
// fails with the reason and the other filesystems' disks are still there.
TEST(ZfsMembers, TheDiskProbeAsksZpoolAndSaysWhenItCannot) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree(), runner);
  config::Config cfg;
  auto probe = disk::make_disk_probe(cfg);
  auto r = probe->run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("the disks under ZFS pools are unknown: zpool status"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_target_disk_info", {{"target", "/data"}, {"disk", "sdc"}}));
  EXPECT_FALSE(r.metrics.has("fsaudit_target_disk_info", {{"target", "/tank"}}));

  runner.answer("zpool status tank", kTankStatus);
  r = probe->run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_target_disk_info", {{"target", "/tank"}, {"disk", "sda"}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_target_disk_info", {{"target", "/tank"}, {"disk", "sdb"}}));
  EXPECT_EQ(runner.count("zpool status tank"), 2);
}

TEST(DiskLabel, DerivedOnDeviceSeries) {
  auto h = tree();
  metrics::Batch b;
  b.gauge("x", "h", {{"device", "md0"}}, 1);
  b.gauge("x", "h", {{"device", "md0"}, {"member", "sdb1"}}, 1);
  b.gauge("x", "h", {{"device", "nothing-here"}}, 1);
  b.status.kernel_errors.push_back({});  // the status items travel with the samples
  b.status.kernel_errors.back().device = "sdb1";
  for (const char* from : {"member", "device"})
    b = metrics::with_derived_label(b, from, "disk", [&](const std::string& d) { return disk_label(h, d); });
  EXPECT_TRUE(b.has("x", {{"device", "md0"}, {"disk", "sda,sdb"}}));
  EXPECT_TRUE(b.has("x", {{"member", "sdb1"}, {"disk", "sdb"}}));
  EXPECT_FALSE(b.has("x", {{"device", "nothing-here"}, {"disk", ""}}));
  ASSERT_EQ(b.status.kernel_errors.size(), 1u);
  EXPECT_EQ(b.status.kernel_errors[0].device, "sdb1");
  for (const auto& m : b.families()[0].metric)
    for (std::size_t i = 1; i < m.label.size(); ++i) EXPECT_LT(m.label[i - 1].name, m.label[i].name);
}

// The md probe's series name the whole disks: a member its own, the array all of its members'.
TEST(DiskLabel, MdProbeSeriesCarryTheirDisks) {
  testing::FakeRunner runner;
  testing::ContextHolder c(tree(), runner);
  auto r = md::make_md_probe(config::default_config())->run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_md_member_faulty", {{"device", "md0"}, {"member", "sda1"}, {"disk", "sda"}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_md_member_faulty", {{"device", "md0"}, {"member", "sdb1"}, {"disk", "sdb"}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_md_member_faulty", {{"device", "md1"}, {"member", "sdc1"}, {"disk", "sdc"}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_md_array_info", {{"device", "md0"}, {"disk", "sda,sdb"}}));
}

}  // namespace
}  // namespace fsaudit::block
