// The btrfs stack model (probes/btrfs/stack.hpp) on sysfs trees of real filesystems: raid1 and single
// (tests/fixtures/btrfs/tree-raid1, tree-single) and dup, raid1c3 and a raid1 mounted degraded with a
// member gone (made by tests/fixtures/btrfs/capture_stack_trees.sh).
#include <gtest/gtest.h>

#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/stack.hpp"
#include "tests/support/probe_fixture.hpp"

namespace fsaudit::btrfs {
namespace {

namespace fs = std::filesystem;

// What read_sysfs finds in the fixture tree (one filesystem under sys/fs/btrfs).
SysfsFilesystem sysfs_of(const std::string& tree) {
  auto root = testing::probe_fixture_dir() / "btrfs" / tree;
  std::string fsid;
  for (const auto& e : fs::directory_iterator(root / "sys/fs/btrfs")) fsid = e.path().filename().string();
  auto f = read_sysfs(HostPaths::under(root), fsid);
  EXPECT_TRUE(f.ok()) << tree << ": " << (f.ok() ? "" : f.error());
  return f.ok() ? *f : SysfsFilesystem{};
}

stack::StackModel model_of(const std::string& tree) { return stack_model(sysfs_of(tree)); }

TEST(BtrfsStackModel, DupKeepsTwoCopiesOnOneDevice) {
  auto m = model_of("tree-dup");
  EXPECT_EQ(m.layout, "dup");
  EXPECT_EQ(m.copies, 2u);
  EXPECT_EQ(m.designed_redundancy, 0);  // both copies sit on the one device
  EXPECT_EQ(m.margin, 0);
  EXPECT_EQ(m.spare_copies, 1);
  EXPECT_EQ(m.expectation(), stack::Expectation::repaired);
  EXPECT_EQ(m.health, stack::Health::ok);
}

TEST(BtrfsStackModel, Raid1c3KeepsThreeCopiesAndSurvivesTwo) {
  auto m = model_of("tree-raid1c3");
  EXPECT_EQ(m.layout, "raid1c3");
  EXPECT_EQ(m.copies, 3u);
  EXPECT_EQ(m.designed_redundancy, 2);
  EXPECT_EQ(m.margin, 2);
  EXPECT_EQ(m.expectation(), stack::Expectation::repaired);
  EXPECT_EQ(m.health, stack::Health::ok);
}

TEST(BtrfsStackModel, Raid1AndSingle) {
  auto r1 = model_of("tree-raid1");
  EXPECT_EQ(r1.layout, "raid1");
  EXPECT_EQ(r1.copies, 2u);
  EXPECT_EQ(r1.margin, 1);
  EXPECT_EQ(r1.health, stack::Health::ok);
  auto s = model_of("tree-single");
  EXPECT_EQ(s.layout, "single");
  EXPECT_EQ(s.copies, 1u);
  // Metadata dup on one device: no member may fail.
  EXPECT_EQ(s.designed_redundancy, 0);
  EXPECT_EQ(s.expectation(), stack::Expectation::detected);
}

TEST(BtrfsStackModel, Raid1WithAMemberMissingHasNoMarginAndSaysSo) {
  auto m = model_of("tree-raid1-missing");
  EXPECT_EQ(m.copies, 2u);
  EXPECT_EQ(m.designed_redundancy, 1);
  EXPECT_EQ(m.margin, 0);
  EXPECT_EQ(m.spare_copies, 0);
  EXPECT_EQ(m.health, stack::Health::missing_members);
  EXPECT_NE(m.reason.find("is missing 1 of 2 members (devid 2 missing)"), std::string::npos) << m.reason;
}

TEST(BtrfsStackModel, NodatasumIsBlindAndProfilesAreJudgedByTheirShape) {
  auto f = sysfs_of("tree-dup");
  EXPECT_EQ(stack_model(f, false).expectation(), stack::Expectation::blind);
  // While a balance converts single -> raid1, a block sits in either: no one number of copies.
  auto converting = f;
  converting.profiles.push_back({"data", "single", 8 << 20, 4 << 20});
  auto c = stack_model(converting);
  EXPECT_EQ(c.layout, "dup+single");
  EXPECT_FALSE(c.copies.has_value());
  EXPECT_EQ(c.expectation(), stack::Expectation::detected);
  auto odd = f;
  odd.profiles.push_back({"data", "raid7", 8 << 20, 4 << 20});
  EXPECT_EQ(stack_model(odd).health, stack::Health::unknown);
}

}  // namespace
}  // namespace fsaudit::btrfs
