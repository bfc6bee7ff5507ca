// btrfs probe: parsers on real fixtures and on outputs captured on this machine, the pure metric
// builder, and the adapter on a sysfs fixture tree copied from a real raid1 / single filesystem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "daemon/config/config.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/btrfs/stack.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::btrfs {
namespace {

namespace fs = std::filesystem;
using testing::fixture;
using testing::probe_fixture_text;

const std::string kRaid1Fsid = "42fbdc2e-9cd9-4f99-aa0a-3dbca1ce9f49";
const std::string kSingleFsid = "6be188f5-120e-49bb-84db-be126bd998dd";

// ---- error_stats ----------------------------------------------------------------------------

TEST(BtrfsErrorStats, CapturedRaid1DeviceWithOneCorruption) {
  auto text = *read_file(testing::probe_fixture_dir() / "btrfs/tree-raid1/sys/fs/btrfs" / kRaid1Fsid /
                         "devinfo/2/error_stats");
  auto e = parse_error_stats(text);
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->write, 0u);
  EXPECT_EQ(e->read, 0u);
  EXPECT_EQ(e->flush, 0u);
  EXPECT_EQ(e->corruption, 1u);
  EXPECT_EQ(e->generation, 0u);
}

TEST(BtrfsErrorStats, InvalidAndIncompleteAreErrors) {
  EXPECT_FALSE(parse_error_stats("write_errs invalid\nread_errs 0\nflush_errs 0\ncorruption_errs 0\ngeneration_errs 0\n").ok());
  auto r = parse_error_stats("write_errs 1\nread_errs 2\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("found 2"), std::string::npos);
}

// ---- btrfs device stats --------------------------------------------------------------------

TEST(BtrfsDeviceStats, SingleDeviceAllZero) {
  auto r = parse_device_stats(fixture("written/btrfs/device-stats-single-all-zero.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].device, "/dev/sdb1");
  EXPECT_EQ((*r)[0].errors.corruption, 0u);
}

TEST(BtrfsDeviceStats, CorruptionErrs412OnDmDevice) {
  auto r = parse_device_stats(fixture("written/btrfs/device-stats-dm-corruption-errs-412.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].device, "/dev/mapper/cryptdata");
  EXPECT_EQ((*r)[0].errors.corruption, 412u);
  EXPECT_EQ((*r)[0].errors.read, 0u);
}

TEST(BtrfsDeviceStats, AllZeroDespiteScrubErrors) {
  // Counters reset (or never raised) while the last scrub still reports csum errors.
  auto r = parse_device_stats(fixture("written/btrfs/device-stats-dm-all-zero-after-scrub-errors.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  const auto& e = (*r)[0].errors;
  EXPECT_EQ(e.write + e.read + e.flush + e.corruption + e.generation, 0u);
  auto scrub = parse_scrub_status(fixture("written/btrfs/scrub-status-finished-csum-48211-uncorrectable.txt"));
  ASSERT_TRUE(scrub.ok());
  EXPECT_EQ(scrub->total.uncorrectable_errors(), 48211u);  // why the scrub counts are exported too
}

TEST(BtrfsDeviceStats, Raid1NvmeHugeCounters) {
  auto r = parse_device_stats(fixture("written/btrfs/device-stats-raid1-nvme-large-counters.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].device, "/dev/nvme1n1p3");
  EXPECT_EQ((*r)[0].errors.write, 0u);
  EXPECT_EQ((*r)[1].device, "/dev/nvme4n1p3");
  EXPECT_EQ((*r)[1].errors.write, 98311420u);
  EXPECT_EQ((*r)[1].errors.read, 102774519u);
  EXPECT_EQ((*r)[1].errors.flush, 3871u);
  EXPECT_EQ((*r)[1].errors.corruption, 1589u);
  EXPECT_EQ((*r)[1].errors.generation, 0u);
}

TEST(BtrfsDeviceStats, Raid1AfterResetAllZero) {
  auto r = parse_device_stats(fixture("written/btrfs/device-stats-raid1-nvme-all-zero.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].device, "/dev/nvme4n1p3");
  EXPECT_EQ((*r)[1].errors.write, 0u);
}

TEST(BtrfsDeviceStats, TabularHasDevids) {
  auto r = parse_device_stats(fixture("written/btrfs/device-stats-T-tabular-two-devices.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].device, "/dev/xvdb");
  EXPECT_EQ((*r)[0].devid, 1u);
  EXPECT_EQ((*r)[1].device, "/dev/xvdc");
  EXPECT_EQ((*r)[1].devid, 3u);
  EXPECT_EQ((*r)[1].errors.read, 2u);
  EXPECT_EQ((*r)[1].errors.corruption, 7u);
}

TEST(BtrfsDeviceStats, CapturedHereRaid1OneCorruptionEach) {
  auto r = parse_device_stats(probe_fixture_text("btrfs/device-stats-raid1-corruption-1-each-progs-6.2.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].device, "/dev/loop3");
  EXPECT_EQ((*r)[0].errors.corruption, 1u);
  EXPECT_EQ((*r)[1].device, "/dev/loop4");
  EXPECT_EQ((*r)[1].errors.corruption, 1u);
}

TEST(BtrfsDeviceStats, NotDeviceStatsIsAnError) {
  auto r = parse_device_stats("ERROR: not a btrfs filesystem: /tmp\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not a btrfs filesystem"), std::string::npos);
}

TEST(BtrfsDeviceStats, TabularRowOfAMissingDeviceKeepsItsPath) {
  // The path of a missing member has a blank; the row is still read, not refused as cut short.
  auto r = parse_device_stats(
      "Id Path           Write errors Read errors Flush errors Corruption errors Generation errors\n"
      "-- -------------- ------------ ----------- ------------ ----------------- -----------------\n"
      " 1 /dev/vdc                  0           0            0                 3                 0\n"
      " 2 <missing disk>            0           5            0                 0                 0\n");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].device, "<missing disk>");
  EXPECT_EQ((*r)[1].devid, 2u);
  EXPECT_EQ((*r)[1].errors.read, 5u);
  EXPECT_EQ((*r)[0].errors.corruption, 3u);
  EXPECT_FALSE(parse_device_stats("Id Path Write errors Read errors\n 2 /dev/vdd 0 0\n").ok()) << "a row cut short";
}

// ---- scrub status captured on this machine -------------------------------------------------

TEST(BtrfsScrubCaptured, NeverScrubbedPerDevice) {
  auto s = parse_scrub_status(probe_fixture_text("btrfs/scrub-status-dR-never-scrubbed-progs-6.2.txt"));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->uuid, kSingleFsid);
  ASSERT_EQ(s->devices.size(), 1u);
  EXPECT_EQ(s->devices[0].device, "/dev/loop3");
  EXPECT_EQ(s->devices[0].state, ScrubState::never);
  EXPECT_EQ(s->total.state, ScrubState::never);
  EXPECT_FALSE(s->total.errors_found().has_value());
}

TEST(BtrfsScrubCaptured, Raid1CorrectedOnLoop4) {
  auto s = parse_scrub_status(probe_fixture_text("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt"));
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(s->devices.size(), 2u);
  EXPECT_EQ(s->devices[0].csum_errors(), 0u);
  EXPECT_EQ(s->devices[1].device, "/dev/loop4");
  EXPECT_EQ(s->devices[1].devid, 2u);
  EXPECT_EQ(s->devices[1].csum_errors(), 1u);
  EXPECT_EQ(s->devices[1].corrected_errors(), 1u);
  EXPECT_EQ(s->total.csum_errors(), 1u);
  EXPECT_EQ(s->total.uncorrectable_errors(), 0u);
  EXPECT_EQ(s->total.state, ScrubState::finished);

  auto sum = parse_scrub_status(probe_fixture_text("btrfs/scrub-status-raid1-corrected-1-progs-6.2.txt"));
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->total.corrected_errors(), 1u);
  EXPECT_NEAR(*sum->total.total_bytes, 816 * 1024.0, 1e-6);

  auto start = parse_scrub_status(probe_fixture_text("btrfs/scrub-start-BdR-raid1-corrected-1-progs-6.2.txt"));
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->devices.size(), 2u);
  EXPECT_EQ(start->total.corrected_errors(), 1u);
  EXPECT_FALSE(start->uncorrectable_reported());

  auto file = parse_scrub_status_file(probe_fixture_text("btrfs/scrub.status.file-raid1-corrected-1.txt"));
  ASSERT_TRUE(file.ok()) << file.error();
  ASSERT_EQ(file->records.size(), 2u);
  auto agg = file->aggregate(kRaid1Fsid);
  ASSERT_TRUE(agg);
  EXPECT_EQ(agg->counters.csum_errors, 1u);
  EXPECT_EQ(agg->counters.corrected_errors, 1u);
  EXPECT_EQ(agg->t_start, 1795997139);
  EXPECT_EQ(agg->state(), ScrubState::finished);
}

TEST(BtrfsScrubCaptured, SingleUncorrectable) {
  auto s = parse_scrub_status(probe_fixture_text("btrfs/scrub-start-B-single-uncorrectable-progs-6.2.txt"));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->uuid, kSingleFsid);
  EXPECT_EQ(s->total.uncorrectable_errors(), 1u);
  EXPECT_TRUE(s->uncorrectable_reported());
  auto d = parse_scrub_status(probe_fixture_text("btrfs/scrub-status-dR-single-uncorrectable-progs-6.2.txt"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->total.uncorrectable_errors(), 1u);
  EXPECT_EQ(d->total.csum_errors(), 1u);
}

// ---- profiles ------------------------------------------------------------------------------

TEST(BtrfsProfiles, Redundancy) {
  for (auto p : {"dup", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6", "RAID1"})
    EXPECT_TRUE(profile_is_redundant(p)) << p;
  for (auto p : {"single", "raid0", ""}) EXPECT_FALSE(profile_is_redundant(p)) << p;
}

// ---- adapter on fixture trees --------------------------------------------------------------

// Writes a minimal btrfs superblock (magic, fsid, dev_item.devid) into a regular file so the
// adapter can pair devid and device name as it does on a real block device.
void write_superblock(const fs::path& p, const std::string& fsid, std::uint64_t devid) {
  std::string buf(0x10000 + 0x1000, '\0');
  std::memcpy(&buf[0x10040], "_BHRfS_M", 8);
  std::string hex;
  for (char c : fsid)
    if (c != '-') hex.push_back(c);
  for (int i = 0; i < 16; ++i) buf[0x10020 + i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  for (int i = 0; i < 8; ++i) buf[0x100c9 + i] = static_cast<char>((devid >> (8 * i)) & 0xff);
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << buf;
}

struct Tree {
  testing::TempDir dir{"fsaudit-btrfs-tree"};
  explicit Tree(const std::string& name) {
    fs::copy(testing::probe_fixture_dir() / "btrfs" / name, dir.path(), fs::copy_options::recursive);
  }
  HostPaths host() const { return HostPaths::under(dir.path()); }
};

Target target(const std::string& mnt, const std::string& source) {
  return Target{mnt, mnt, "btrfs", source, "rw", "rw", 0, 41};
}

TEST(BtrfsSysfs, FindFsidByNameAndByMajorMinor) {
  Tree t("tree-raid1");
  auto h = t.host();
  auto id = find_fsid(h, "/dev/loop4");
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(*id, kRaid1Fsid);
  auto none = find_fsid(h, "/dev/sdz1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("/dev/sdz1"), std::string::npos);
  // /dev/mapper/x -> ../loop3 is followed to the kernel name.
  fs::create_directories(t.dir / "dev/mapper");
  write_superblock(t.dir / "dev/loop3", kRaid1Fsid, 1);
  fs::create_symlink("../loop3", t.dir / "dev/mapper/crypt");
  auto via_link = find_fsid(h, "/dev/mapper/crypt");
  ASSERT_TRUE(via_link.ok()) << via_link.error();
  EXPECT_EQ(*via_link, kRaid1Fsid);
}

// The memo answers a known mount source without listing every btrfs, and the devid pairing without
// reading superblocks; what sysfs shows is checked first, so an unmount or a new member is seen.
TEST(BtrfsSysfs, TheMemoIsUsedOnlyWhileSysfsStillShowsWhatItRemembers) {
  Tree t("tree-raid1");
  auto h = t.host();
  write_superblock(t.dir / "dev/loop3", kRaid1Fsid, 1);
  write_superblock(t.dir / "dev/loop4", kRaid1Fsid, 2);
  SysfsMemo memo;
  ASSERT_EQ(*find_fsid(h, "/dev/loop4", &memo), kRaid1Fsid);
  EXPECT_EQ(memo.lookups_saved(), 0u);
  ASSERT_EQ(*find_fsid(h, "/dev/loop4", &memo), kRaid1Fsid);
  EXPECT_EQ(memo.lookups_saved(), 1u);
  // The other member, never asked for: found in the member index of the first scan, not by another.
  ASSERT_EQ(*find_fsid(h, "/dev/loop3", &memo), kRaid1Fsid);
  EXPECT_EQ(memo.lookups_saved(), 2u);
  ASSERT_EQ(*find_fsid(h, "/dev/loop3", &memo), kRaid1Fsid);  // and remembered by source from then on
  EXPECT_EQ(memo.lookups_saved(), 3u);
  // A source no member is named like falls back to a scan (and is no member: an error).
  EXPECT_FALSE(find_fsid(h, "/dev/loop7", &memo).ok());
  EXPECT_EQ(memo.lookups_saved(), 3u);

  auto first = read_sysfs(h, kRaid1Fsid, &memo);
  ASSERT_TRUE(first.ok()) << first.error();
  // Without superblocks the pairing can only come from the memo.
  fs::remove(t.dir / "dev/loop3");
  fs::remove(t.dir / "dev/loop4");
  auto second = read_sysfs(h, kRaid1Fsid, &memo);
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_EQ(first->devices.size(), second->devices.size());
  for (std::size_t i = 0; i < first->devices.size(); ++i) {
    EXPECT_FALSE(second->devices[i].name.empty());
    EXPECT_EQ(first->devices[i].name, second->devices[i].name);
  }
  EXPECT_EQ(memo.lookups_saved(), 4u);
  // A member added (btrfs device add / replace): the pairing is read again, not remembered.
  auto sys = t.dir / "sys/fs/btrfs" / kRaid1Fsid;
  fs::create_directories(sys / "devices/loop5");
  auto third = read_sysfs(h, kRaid1Fsid, &memo);
  ASSERT_TRUE(third.ok()) << third.error();
  EXPECT_EQ(memo.lookups_saved(), 4u);
  for (const auto& d : third->devices) EXPECT_TRUE(d.name.empty()) << d.name;  // superblocks are gone

  // Unmounted: the filesystem's directory goes away, and so does the answer.
  fs::remove_all(sys);
  auto gone = find_fsid(h, "/dev/loop4", &memo);
  EXPECT_FALSE(gone.ok());
  EXPECT_EQ(memo.lookups_saved(), 4u);
}

TEST(BtrfsSysfs, SuperblockDevidChecksFsid) {
  testing::TempDir d;
  write_superblock(d / "dev", kRaid1Fsid, 7);
  auto id = read_superblock_devid(d / "dev", kRaid1Fsid);
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(*id, 7u);
  auto wrong = read_superblock_devid(d / "dev", kSingleFsid);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().find("is not"), std::string::npos);
  testing::write_text(d / "zero", std::string(0x11000, '\0'));
  EXPECT_FALSE(read_superblock_devid(d / "zero", kRaid1Fsid).ok());
}

TEST(BtrfsProbeAdapter, Raid1TreeCountersProfilesAndScrub) {
  Tree t("tree-raid1");
  write_superblock(t.dir / "dev/loop3", kRaid1Fsid, 1);
  write_superblock(t.dir / "dev/loop4", kRaid1Fsid, 2);
  // The status file, where btrfs-progs keeps it (under rootfs).
  fs::create_directories(t.dir / "var/lib/btrfs");
  testing::write_text(t.dir / "var/lib/btrfs" / ("scrub.status." + kRaid1Fsid),
                      probe_fixture_text("btrfs/scrub.status.file-raid1-corrected-1.txt"));
  testing::FakeRunner runner;
  runner.answer("btrfs scrub status -d -R /mnt/r1", probe_fixture_text("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt"));
  testing::ContextHolder c(t.host(), runner);
  auto probe = btrfs::make_btrfs_probe(config::default_config());
  EXPECT_EQ(probe->name(), "btrfs");
  auto tg = target("/mnt/r1", "/dev/loop3");
  ASSERT_TRUE(probe->applies_to(tg));
  EXPECT_FALSE(probe->applies_to(Target{"/x", "/x", "ext4", "/dev/vda", "", "", 0, 0}));
  auto r = probe->run(tg, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  const auto& b = r.metrics;
  // sysfs counters: no need for `btrfs device stats`; the scrub is the scrub probe's (no command).
  EXPECT_EQ(runner.calls, std::vector<std::string>{});
  EXPECT_EQ(b.value("fsaudit_btrfs_device_errors", {{"device", "loop4"}, {"kind", "corruption"}}), 1);
  EXPECT_EQ(b.value("fsaudit_btrfs_device_errors", {{"device", "loop3"}, {"devid", "1"}, {"kind", "corruption"}}), 1);
  // Counters at 0 and members that are there are no series by default (issue 33's budget).
  EXPECT_FALSE(b.has("fsaudit_btrfs_device_errors", {{"device", "loop4"}, {"devid", "2"}, {"kind", "read"}}));
  EXPECT_FALSE(b.has("fsaudit_btrfs_device_missing"));
  EXPECT_FALSE(b.has("fsaudit_btrfs_devices"));
  EXPECT_FALSE(b.has("fsaudit_btrfs_profile_redundant"));  // the profile label says it
  EXPECT_EQ(b.value("fsaudit_btrfs_used_bytes", {{"type", "data"}, {"profile", "raid1"}}), 262144);
  EXPECT_EQ(b.value("fsaudit_btrfs_allocated_bytes", {{"type", "metadata"}, {"profile", "raid1"}}), 54525952);
  EXPECT_FALSE(b.has("fsaudit_btrfs_allocated_bytes", {{"type", "system"}}));
  // Derived series (the profile label, the stack's layout say them): btrfs.detail: full only.
  EXPECT_FALSE(b.has("fsaudit_btrfs_nonredundant_used_bytes"));
  EXPECT_FALSE(b.has("fsaudit_btrfs_filesystem_info"));
  EXPECT_FALSE(b.has("fsaudit_filesystem_data_redundancy"));
  EXPECT_EQ(b.value("fsaudit_redundancy_margin", {{"target", "/mnt/r1"}, {"fs", "btrfs"}}), 1);
  EXPECT_EQ(b.value("fsaudit_redundancy_designed", {{"target", "/mnt/r1"}, {"fs", "btrfs"}}), 1);
  // The scrub's counts are the scrub probe's (tests/scrub/probe_test.cpp, same fixtures).
  EXPECT_FALSE(b.has("fsaudit_btrfs_scrub_errors"));

  // btrfs.detail: full: every counter and member, the system block groups, the data redundancy.
  auto full = btrfs::make_btrfs_probe(config::parse_config("btrfs: {detail: full}\n", "test.yaml"))->run(tg, c.ctx);
  ASSERT_EQ(full.outcome, Outcome::ok) << full.reason;
  const auto& f = full.metrics;
  EXPECT_EQ(f.value("fsaudit_btrfs_device_errors", {{"device", "loop4"}, {"devid", "2"}, {"kind", "read"}}), 0);
  EXPECT_EQ(f.value("fsaudit_btrfs_device_missing", {{"device", "loop3"}}), 0);
  EXPECT_EQ(f.value("fsaudit_btrfs_device_missing", {{"device", "loop4"}, {"devid", "2"}}), 0);
  EXPECT_TRUE(f.has("fsaudit_btrfs_allocated_bytes", {{"type", "system"}}));
  EXPECT_EQ(f.value("fsaudit_filesystem_data_redundancy", {{"target", "/mnt/r1"}, {"fs", "btrfs"}}), 1);
}

TEST(BtrfsProbeAdapter, SingleTreeReportsNoRedundancyAndUncorrectable) {
  Tree t("tree-single");
  // No superblock files: the only member and the only devid are paired directly.
  testing::FakeRunner runner;
  runner.answer("btrfs scrub status -d -R /mnt/s", probe_fixture_text("btrfs/scrub-status-dR-single-uncorrectable-progs-6.2.txt"));
  testing::ContextHolder c(t.host(), runner);
  auto r = btrfs::make_btrfs_probe(config::parse_config("btrfs: {detail: full}\n", "test.yaml"))
               ->run(target("/mnt/s", "/dev/loop3"), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  const auto& b = r.metrics;
  EXPECT_TRUE(b.has("fsaudit_btrfs_filesystem_info", {{"target", "/mnt/s"}}));
  EXPECT_EQ(b.value("fsaudit_btrfs_device_errors", {{"device", "loop3"}, {"kind", "corruption"}}), 4);
  EXPECT_EQ(b.value("fsaudit_filesystem_data_redundancy", {{"target", "/mnt/s"}}), 0);
  // A layout built without redundancy has no margin to lose: neither series (stack::exports_redundancy).
  EXPECT_FALSE(b.has("fsaudit_redundancy_margin"));
  EXPECT_FALSE(b.has("fsaudit_redundancy_designed"));
  EXPECT_EQ(b.value("fsaudit_btrfs_used_bytes", {{"type", "data"}, {"profile", "single"}}), 262144);
  EXPECT_EQ(b.value("fsaudit_btrfs_nonredundant_used_bytes", {{"type", "data"}}), 262144);
  EXPECT_EQ(b.value("fsaudit_btrfs_nonredundant_used_bytes", {{"type", "metadata"}}), 0);
}

TEST(BtrfsProbeAdapter, NoSysfsFallsBackToDeviceStatsCommand) {
  testing::TempDir empty;
  fs::create_directories(empty / "sys/fs/btrfs/features");
  fs::create_directories(empty / "dev/mapper");
  testing::write_text(empty / "dev/dm-0", "");
  fs::create_symlink("../dm-0", empty / "dev/mapper/cryptdata");
  testing::FakeRunner runner;
  runner.answer("btrfs device stats /data", fixture("written/btrfs/device-stats-dm-corruption-errs-412.txt"));
  runner.answer("btrfs scrub status -d -R /data", fixture("written/btrfs/scrub-status-finished-csum-48211-uncorrectable.txt"));
  testing::ContextHolder c(HostPaths::under(empty.path()), runner);
  auto r = btrfs::make_btrfs_probe(config::default_config())
               ->run(Target{"/data", "/data", "btrfs", "/dev/mapper/cryptdata", "", "", 0, 30}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  // Named by the kernel name behind /dev/mapper/cryptdata, as sysfs and the kernel log name it.
  EXPECT_EQ(r.metrics.value("fsaudit_btrfs_device_errors", {{"device", "dm-0"}, {"kind", "corruption"}}), 412);
  EXPECT_FALSE(r.metrics.has("fsaudit_filesystem_data_redundancy"));  // unknown without sysfs
}

TEST(BtrfsProbeAdapter, MissingToolIsAClearFailureButKeepsSysfsCounters) {
  Tree t("tree-raid1");
  // devid 1's sysfs counters unreadable: only `btrfs device stats` could fill them in.
  testing::write_text(t.dir / "sys/fs/btrfs" / kRaid1Fsid / "devinfo/1/error_stats",
                      "write_errs invalid\nread_errs 0\nflush_errs 0\ncorruption_errs 0\ngeneration_errs 0\n");
  testing::FakeRunner runner;  // answers nothing: "btrfs: not found in PATH"
  testing::ContextHolder c(t.host(), runner);
  auto r = btrfs::make_btrfs_probe(config::default_config())->run(target("/mnt/r1", "/dev/loop3"), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("btrfs device stats /mnt/r1"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("not found"), std::string::npos) << r.reason;
  // Without superblocks the two devices cannot be named: devid labels keep them apart.
  EXPECT_EQ(r.metrics.value("fsaudit_btrfs_device_errors", {{"device", "devid-2"}, {"kind", "corruption"}}), 1);
}

TEST(BtrfsProbeAdapter, UnreadableErrorStatsFallsBackToDeviceStatsForThatDevice) {
  Tree t("tree-raid1");
  write_superblock(t.dir / "dev/loop3", kRaid1Fsid, 1);
  write_superblock(t.dir / "dev/loop4", kRaid1Fsid, 2);
  testing::write_text(t.dir / "sys/fs/btrfs" / kRaid1Fsid / "devinfo/2/error_stats",
                      "write_errs invalid\nread_errs 0\nflush_errs 0\ncorruption_errs 0\ngeneration_errs 0\n");
  testing::FakeRunner runner;
  runner.answer("btrfs device stats /mnt/r1", probe_fixture_text("btrfs/device-stats-raid1-corruption-1-each-progs-6.2.txt"));
  runner.answer("btrfs scrub status -d -R /mnt/r1", probe_fixture_text("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt"));
  testing::ContextHolder c(t.host(), runner);
  auto r = btrfs::make_btrfs_probe(config::default_config())->run(target("/mnt/r1", "/dev/loop3"), c.ctx);
  // Junk in a file that is there is a failure (issue 32), though the command fills the counters in.
  ASSERT_EQ(r.outcome, Outcome::failed) << r.reason;
  EXPECT_NE(r.reason.find("devinfo/2/error_stats"), std::string::npos) << r.reason;
  EXPECT_EQ(runner.calls.front(), "btrfs device stats /mnt/r1");
  // loop3 from sysfs (devid 1), loop4 from the command (printed /dev/loop4, no devid): the same
  // devid as loop4's other series, from the sysfs pairing.
  EXPECT_EQ(r.metrics.value("fsaudit_btrfs_device_errors", {{"device", "loop3"}, {"devid", "1"}, {"kind", "corruption"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_btrfs_device_errors", {{"device", "loop4"}, {"devid", "2"}, {"kind", "corruption"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_btrfs_device_errors", {{"devid", ""}}));
}

TEST(BtrfsProbeAdapter, MissingDeviceIsReported) {
  Tree t("tree-raid1");
  write_superblock(t.dir / "dev/loop3", kRaid1Fsid, 1);
  auto fsdir = t.dir / "sys/fs/btrfs" / kRaid1Fsid;
  fs::remove_all(fsdir / "devices/loop4");
  testing::write_text(fsdir / "devinfo/2/missing", "1\n");
  testing::FakeRunner runner;
  runner.answer("btrfs scrub status -d -R /mnt/r1", probe_fixture_text("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt"));
  testing::ContextHolder c(t.host(), runner);
  auto r = btrfs::make_btrfs_probe(config::default_config())->run(target("/mnt/r1", "/dev/loop3"), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_btrfs_device_missing", {{"devid", "2"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_btrfs_device_missing", {{"device", "loop3"}}));  // only while missing
  // What the no-redundancy alert names: the member that is gone, in btrfs's words (sysfs no longer
  // has its path, so its devid), and no series for the member that is there.
  EXPECT_EQ(r.metrics.value("fsaudit_redundancy_margin", {{"target", "/mnt/r1"}}), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_redundancy_member_down", {{"target", "/mnt/r1"}, {"fs", "btrfs"}, {"state", "missing"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_redundancy_member_down", {{"member", "/dev/loop3"}}));
  EXPECT_FALSE(r.metrics.has("fsaudit_redundancy_member_down", {{"member", "loop3"}}));
}

// Issue 32: sysfs attributes that are there but unreadable (errno) or junk fail the probe with the
// file; the counters the command gives are still published.
TEST(BtrfsProbeAdapter, UnreadableOrJunkSysfsAttributesFail) {
  for (const auto& [file, junk] : std::vector<std::pair<std::string, std::string>>{
           {"devinfo/2/error_stats", "<dir>"}, {"devinfo/1/missing", "maybe\n"}, {"devinfo/1/missing", "<dir>"},
           {"allocation/data/raid1/total_bytes", "<dir>"}, {"allocation/data/raid1/used_bytes", "12x\n"}}) {
    Tree t("tree-raid1");
    write_superblock(t.dir / "dev/loop3", kRaid1Fsid, 1);
    write_superblock(t.dir / "dev/loop4", kRaid1Fsid, 2);
    auto p = t.dir / "sys/fs/btrfs" / kRaid1Fsid / file;
    ASSERT_TRUE(fs::exists(p)) << p;
    fs::remove(p);
    if (junk == "<dir>") fs::create_directories(p);
    else testing::write_text(p, junk);
    testing::FakeRunner runner;
    runner.answer("btrfs device stats /mnt/r1", probe_fixture_text("btrfs/device-stats-raid1-corruption-1-each-progs-6.2.txt"));
    runner.answer("btrfs scrub status -d -R /mnt/r1", probe_fixture_text("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt"));
    testing::ContextHolder c(t.host(), runner);
    auto r = btrfs::make_btrfs_probe(config::default_config())->run(target("/mnt/r1", "/dev/loop3"), c.ctx);
    ASSERT_EQ(r.outcome, Outcome::failed) << file << " '" << junk << "' went unnoticed";
    EXPECT_NE(r.reason.find(p.string()), std::string::npos) << r.reason;
    EXPECT_TRUE(r.metrics.has("fsaudit_btrfs_device_errors")) << file;
  }
}

}  // namespace
}  // namespace fsaudit
