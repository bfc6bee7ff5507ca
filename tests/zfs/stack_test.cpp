// The ZFS stack model (probes/zfs/stack.hpp) on real zfs-fuse captures (tests/fixtures/zfs, made by
// tests/fixtures/zfs/capture_stack.sh; tests/fixtures/captured/zfs-fuse) and on OpenZFS layouts
// written from the documented format (tests/fixtures/written/zfs).
#include <gtest/gtest.h>

#include "probes/zfs/probe.hpp"
#include "probes/zfs/stack.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::zfs {
namespace {

ZfsPoolStatus pool_of(const std::string& fixture, const std::string& name = "") {
  auto r = parse_zpool_status(testing::fixture(fixture));
  EXPECT_TRUE(r.ok()) << fixture;
  if (!r) return {};
  for (const auto& p : r->pools)
    if (name.empty() || p.name == name) return p;
  ADD_FAILURE() << "no pool " << name << " in " << fixture;
  return {};
}

DatasetShape shape_of(const std::string& fixture, const std::string& dataset) {
  auto t = parse_property_table(testing::fixture(fixture));
  EXPECT_TRUE(t.ok()) << fixture;
  if (!t) return {};
  auto s = dataset_shape(*t, dataset);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
  return s.ok() ? *s : DatasetShape{};
}

// copies=2 on one vdev: two copies of every block on one disk. A bad copy is repaired from the
// other, though no member may fail. The layout word "single" alone would say 1 copy, detected.
TEST(ZfsStackModel, CopiesTwoOnASingleVdevKeepsTwoCopiesAndRepairs) {
  auto ds = shape_of("zfs/zfs-fuse-get-Hp-copies-checksum-copies-2.txt", "fxstkc2");
  EXPECT_EQ(ds.copies, 2);
  EXPECT_TRUE(ds.checksum);
  auto m = stack_model(pool_of("zfs/zfs-fuse-status-single-vdev-copies-2.txt"), ds);
  EXPECT_EQ(m.layout, "single");
  EXPECT_EQ(m.copies, 2u);
  EXPECT_EQ(m.expectation(), stack::Expectation::repaired);
  EXPECT_EQ(m.designed_redundancy, 0);
  EXPECT_EQ(m.margin, 0);
  EXPECT_EQ(m.spare_copies, 1);
  EXPECT_EQ(m.health, stack::Health::ok);
  // The same pool with the default copies=1: one copy, a bad block is only detected.
  auto one = stack_model(pool_of("zfs/zfs-fuse-status-single-vdev-copies-2.txt"));
  EXPECT_EQ(one.copies, 1u);
  EXPECT_EQ(one.expectation(), stack::Expectation::detected);
}

TEST(ZfsStackModel, ThreeWayMirrorKeepsThreeCopiesAndSurvivesTwo) {
  auto m = stack_model(pool_of("zfs/zfs-fuse-status-three-way-mirror.txt"));
  EXPECT_EQ(m.layout, "mirror");
  EXPECT_EQ(m.copies, 3u);
  EXPECT_EQ(m.designed_redundancy, 2);
  EXPECT_EQ(m.margin, 2);
  EXPECT_EQ(m.health, stack::Health::ok);
  EXPECT_EQ(m.expectation(), stack::Expectation::repaired);
  // With copies=2 on top: six copies of a block, still two member failures.
  auto six = stack_model(pool_of("zfs/zfs-fuse-status-three-way-mirror.txt"), DatasetShape{2, true});
  EXPECT_EQ(six.copies, 6u);
  EXPECT_EQ(six.margin, 2);
}

TEST(ZfsStackModel, OneMemberOfAThreeWayMirrorOfflineLeavesAMarginOfOne) {
  auto m = stack_model(pool_of("zfs/zfs-fuse-status-three-way-mirror-one-offline.txt"));
  EXPECT_EQ(m.designed_redundancy, 2);
  EXPECT_EQ(m.margin, 1);
  EXPECT_EQ(m.health, stack::Health::degraded);
  EXPECT_NE(m.reason.find("DEGRADED"), std::string::npos) << m.reason;
  EXPECT_NE(m.reason.find("m1.img OFFLINE"), std::string::npos) << m.reason;
}

TEST(ZfsStackModel, DegradedMirrorHasNoMarginAndNamesItsMember) {
  auto m = stack_model(pool_of("captured/zfs-fuse/zpool-status-mirror-degraded-offline.txt"));
  EXPECT_EQ(m.copies, 2u);
  EXPECT_EQ(m.designed_redundancy, 1);
  EXPECT_EQ(m.margin, 0);
  EXPECT_EQ(m.spare_copies, 0);
  EXPECT_EQ(m.health, stack::Health::degraded);
  EXPECT_FALSE(m.healthy());
  EXPECT_NE(m.reason.find("pool fxcapm is DEGRADED"), std::string::npos) << m.reason;
  EXPECT_NE(m.reason.find("zb.img OFFLINE"), std::string::npos) << m.reason;
  ASSERT_EQ(m.bad_members.size(), 1u);
  EXPECT_EQ(m.bad_members[0].state, "OFFLINE");
  EXPECT_NE(m.bad_members[0].name.find("zb.img"), std::string::npos) << m.bad_members[0].name;
  // Still a mirror by design: once whole it repairs again.
  EXPECT_EQ(m.expectation(), stack::Expectation::repaired);

  auto unavail = stack_model(pool_of("written/zfs/zpool-status-openzfs-degraded-mirror-unavail-was-gpt-no-scan.txt"));
  EXPECT_EQ(unavail.margin, 0);
  EXPECT_EQ(unavail.health, stack::Health::degraded);
  EXPECT_NE(unavail.reason.find("UNAVAIL"), std::string::npos) << unavail.reason;
}

TEST(ZfsStackModel, ResilveringPoolIsNotHealthy) {
  auto m = stack_model(pool_of("written/zfs/zpool-status-openzfs-resilver-in-progress-slash-total-replacing-resilvering.txt"));
  EXPECT_EQ(m.health, stack::Health::resilvering);
  EXPECT_NE(m.reason.find("pool bulk is DEGRADED and resilvering"), std::string::npos) << m.reason;
  EXPECT_NE(m.reason.find("UNAVAIL"), std::string::npos) << m.reason;
  EXPECT_EQ(m.layout, "raidz1");
  EXPECT_EQ(m.designed_redundancy, 1);
  EXPECT_EQ(m.margin, 0);  // the replacing-4 child is not whole yet
}

TEST(ZfsStackModel, RaidzKeepsOneCopyWithParity) {
  auto m = stack_model(pool_of("written/zfs/zpool-status-p-openzfs-two-pools-raidz1-nvme-mirror-scrub-repaired.txt", "data0"));
  EXPECT_EQ(m.layout, "raidz1");
  EXPECT_EQ(m.copies, 1u);
  EXPECT_EQ(m.parity, 1u);
  EXPECT_EQ(m.margin, 1);
  EXPECT_EQ(m.expectation(), stack::Expectation::repaired);
  EXPECT_EQ(m.health, stack::Health::ok);
}

// A mirror and a single disk in one pool: a block may land on either, so no one number of copies,
// and a bad block on the single disk is not repaired.
TEST(ZfsStackModel, MixedPoolHasNoCopiesAndDoesNotRepairByDesign) {
  auto m = stack_model(pool_of("captured/zfs-fuse/zpool-status-mirror-and-single-never-scrubbed.txt", "fxcaps"));
  EXPECT_EQ(m.layout, "single");
  EXPECT_EQ(m.copies, 1u);
  EXPECT_EQ(m.expectation(), stack::Expectation::detected);
  EXPECT_EQ(m.designed_redundancy, 0);
  auto mixed = pool_of("captured/zfs-fuse/zpool-status-mirror-and-single-never-scrubbed.txt", "fxcapm");
  // Graft the single pool's vdev into the mirror pool: two top-level data vdevs of different shape.
  auto single = pool_of("captured/zfs-fuse/zpool-status-mirror-and-single-never-scrubbed.txt", "fxcaps");
  mixed.vdevs.insert(mixed.vdevs.end(), single.vdevs.begin(), single.vdevs.end());
  auto both = stack_model(mixed);
  EXPECT_EQ(both.layout, "mirror+single");
  EXPECT_FALSE(both.copies.has_value());
  EXPECT_EQ(both.expectation(), stack::Expectation::detected);
  EXPECT_EQ(both.designed_redundancy, 0);
}

TEST(ZfsStackModel, CutOutputIsUnknownHealthAndChecksumOffIsBlind) {
  auto p = pool_of("captured/zfs-fuse/zpool-status-mirror-degraded-offline.txt");
  p.complete = false;
  auto m = stack_model(p);
  EXPECT_EQ(m.health, stack::Health::unknown);
  EXPECT_NE(m.reason.find("cut short"), std::string::npos) << m.reason;
  auto off = stack_model(pool_of("zfs/zfs-fuse-status-three-way-mirror.txt"), DatasetShape{1, false});
  EXPECT_EQ(off.expectation(), stack::Expectation::blind);
}

// The probe exports what the model says: a degraded mirror survives no further member failure.
TEST(ZfsStackModel, TheProbeExportsTheMarginOfADegradedMirrorAsZero) {
  auto st = parse_zpool_status(testing::fixture("captured/zfs-fuse/zpool-status-mirror-degraded-offline.txt"));
  ASSERT_TRUE(st.ok());
  std::map<std::string, ScrubMemory> memory;
  auto b = build_zfs_metrics(*st, {}, StatusFormat::text, memory);
  EXPECT_EQ(b.value("fsaudit_redundancy_margin", {{"target", "fxcapm"}, {"fs", "zfs"}}), 0);
  EXPECT_EQ(b.value("fsaudit_redundancy_designed", {{"target", "fxcapm"}, {"fs", "zfs"}}), 1);  // FsauditNoRedundancyLeft
  EXPECT_FALSE(b.has("fsaudit_zfs_pool_redundant"));  // the stack model says it:
  EXPECT_GE(b.value("fsaudit_redundancy_designed", {{"target", "fxcapm"}, {"fs", "zfs"}}), 1);  // by design
  // The member the no-redundancy alert names, with its state; the healthy side has no series.
  EXPECT_EQ(b.value("fsaudit_redundancy_member_down", {{"target", "fxcapm"}, {"fs", "zfs"}, {"state", "OFFLINE"},
                                                       {"member", "/tmp/fsaudit-capture.NtFSQg/zb.img"}}), 1);
  EXPECT_FALSE(b.has("fsaudit_redundancy_member_down", {{"member", "/tmp/fsaudit-capture.NtFSQg/za.img"}}));
  EXPECT_FALSE(b.has("fsaudit_redundancy_member_down", {{"state", "ONLINE"}}));
}

TEST(ZfsStackModel, DatasetShapeRefusesWhatItCannotRead) {
  PropertyTable t{{"tank", {{"copies", "7"}, {"checksum", "on"}}}};
  EXPECT_FALSE(dataset_shape(t, "tank").ok());
  EXPECT_FALSE(dataset_shape(t, "other").ok());
  t["tank"]["copies"] = "1";
  t["tank"].erase("checksum");
  EXPECT_FALSE(dataset_shape(t, "tank").ok());
}

}  // namespace
}  // namespace fsaudit::zfs
