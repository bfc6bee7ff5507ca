// md probe: the mdstat parser on captured and written fixtures, the adapter on fixture trees.
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "daemon/metrics/store.hpp"
#include "probes/md/probe.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

using testing::probe_fixture_text;
using testing::probe_fixture_tree;

md::Mdstat mdstat(const std::string& name) {
  auto r = md::parse_mdstat(probe_fixture_text("md/" + name));
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
  testing::ContextHolder c(probe_fixture_tree("md/tree"), runner);
  auto probe = md::make_md_probe(config::default_config());
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
  auto r = md::make_md_probe(config::default_config())->run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::not_applicable);
  EXPECT_NE(r.reason.find("mdstat"), std::string::npos);
}

// Issue 32: an array waiting for its resync (resync=DELAYED: another array on the same disks goes
// first) is in resync as the kernel's sync_action says, not idle; =PENDING (a read-only array's
// resync not started) is idle as the kernel says. Any action word before '=' counts.
TEST(Mdstat, DelayedSyncIsTheWaitingActionNotIdle) {
  auto s = mdstat("mdstat-check-delayed-inactive-autoreadonly.txt");
  auto b = md::md_metrics(md::Observation{s, {}});
  EXPECT_EQ(b.value("fsaudit_md_sync_action", {{"device", "md2"}, {"state", "resync"}}), 1);
  EXPECT_EQ(b.value("fsaudit_md_sync_action", {{"device", "md2"}, {"state", "idle"}}), 0);
  const std::string head = "Personalities : [raid1]\nmd5 : active raid1 sdb1[1] sda1[0]\n      1046528 blocks super 1.2 [2/2] [UU]\n";
  for (const auto& [line, want] : std::vector<std::pair<std::string, std::string>>{{"resync=DELAYED", "resync"},
                                                                                     {"recovery=DELAYED", "recover"},
                                                                                     {"reshape=DELAYED", "reshape"},
                                                                                     {"check=DELAYED", "check"},
                                                                                     {"resync=REMOTE", "resync"},
                                                                                     {"resync=PENDING", "idle"}}) {
    auto r = md::parse_mdstat(head + "      \t" + line + "\n      \nunused devices: <none>\n");
    ASSERT_TRUE(r.ok()) << r.error();
    auto m = md::md_metrics(md::Observation{*r, {}});
    EXPECT_EQ(m.value("fsaudit_md_sync_action", {{"device", "md5"}, {"state", want}}), 1) << line;
  }
}

// Issue 32: /proc/mdstat cut short fails the probe but keeps the arrays that were whole before the cut.
TEST(MdAdapter, CutMdstatKeepsTheWholeArraysAndFails) {
  const std::string full =
      "Personalities : [raid1]\n"
      "md0 : active raid1 sdb1[1] sda1[0]\n"
      "      1046528 blocks super 1.2 [2/2] [UU]\n"
      "      \n"
      "md1 : active raid1 sdd1[1](F) sdc1[0]\n"
      "      1046528 blocks super 1.2 [2/1] [U_]\n"
      "      \n"
      "unused devices: <none>\n";
  for (std::size_t n : {full.find("md1 :"), full.find("[2/1]"), full.find("unused devices:") + 9}) {
    testing::TempDir dir("md-cut");
    std::filesystem::create_directories(dir / "proc");
    testing::write_text(dir / "proc/mdstat", full.substr(0, n));
    testing::FakeRunner runner;
    testing::ContextHolder c(HostPaths::under(dir.path()), runner);
    auto r = md::make_md_probe(config::default_config())->run(Target::host(), c.ctx);
    ASSERT_EQ(r.outcome, Outcome::failed) << "cut after " << n;
    EXPECT_NE(r.reason.find("cut short"), std::string::npos) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_md_degraded", {{"device", "md0"}}), 0) << "md0 was whole before the cut at " << n;
    EXPECT_EQ(r.metrics.value("fsaudit_md_array_active", {{"device", "md0"}}), 1) << n;
    const bool md1_whole = n > full.find("unused");
    EXPECT_EQ(r.metrics.has("fsaudit_md_degraded", {{"device", "md1"}}), md1_whole) << n;
    testing::write_text(dir / "scrape.txt", metrics::serialize(r.metrics));
    auto check = testing::run({"sh", "-c", "promtool check metrics < '" + (dir / "scrape.txt").string() + "'"});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
}

// Issue 32: an md sysfs attribute that is there but unreadable or junk fails the probe with the file;
// an absent one (raid0 has no degraded/mismatch_cnt) stays silent.
TEST(MdAdapter, UnreadableOrJunkSysfsAttributeFails) {
  for (const auto& [file, junk] : std::vector<std::pair<std::string, std::string>>{
           {"mismatch_cnt", "<dir>"}, {"degraded", "x\n"}, {"sync_completed", "12 of 40\n"}}) {
    testing::TempDir dir("md-sysfs");
    std::filesystem::copy(testing::probe_fixture_dir() / "md/tree", dir.path(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    auto p = dir / "sys/block/md1/md" / file;
    std::filesystem::remove(p);
    if (junk == "<dir>") std::filesystem::create_directories(p);
    else testing::write_text(p, junk);
    testing::FakeRunner runner;
    testing::ContextHolder c(HostPaths::under(dir.path()), runner);
    auto r = md::make_md_probe(config::default_config())->run(Target::host(), c.ctx);
    ASSERT_EQ(r.outcome, Outcome::failed) << file << " '" << junk << "'";
    EXPECT_NE(r.reason.find(p.string()), std::string::npos) << r.reason;
  }
}

}  // namespace
}  // namespace fsaudit
