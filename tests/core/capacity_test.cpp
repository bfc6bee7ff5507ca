// The capacity probe's series (issue 33's budget): free bytes only with capacity.detail: full, and no
// inode series where statfs says the filesystem has no inode table.
#include <gtest/gtest.h>

#include <sys/statvfs.h>

#include "probes/capacity/probe.hpp"

using namespace fsaudit;

namespace {

struct statvfs sample(fsblkcnt_t blocks, fsfilcnt_t files) {
  struct statvfs s {};
  s.f_frsize = 4096;
  s.f_blocks = blocks;
  s.f_bfree = blocks / 2;
  s.f_bavail = blocks / 4;
  s.f_files = files;
  s.f_ffree = files / 2;
  return s;
}

}  // namespace

TEST(CapacityMetrics, FreeBytesOnlyOnRequestAndNoInodesWhereThereIsNoTable) {
  Target ext4{"/srv", "/srv", "ext4", "/dev/sdb1", "", "", 8, 17};
  const auto c = capacity::capacity_from_statvfs(sample(1000, 64));
  auto lean = capacity::capacity_metrics(ext4, c);
  const metrics::Labels l{{"target", "/srv"}, {"fs", "ext4"}};
  EXPECT_EQ(lean.value("fsaudit_filesystem_size_bytes", l), 1000.0 * 4096);
  EXPECT_EQ(lean.value("fsaudit_filesystem_avail_bytes", l), 250.0 * 4096);
  EXPECT_EQ(lean.value("fsaudit_filesystem_files", l), 64);
  EXPECT_EQ(lean.value("fsaudit_filesystem_files_free", l), 32);
  EXPECT_FALSE(lean.has("fsaudit_filesystem_free_bytes"));
  auto full = capacity::capacity_metrics(ext4, c, /*free_bytes_series=*/true);
  EXPECT_EQ(full.value("fsaudit_filesystem_free_bytes", l), 500.0 * 4096);

  // btrfs says 0 inodes: not a full inode table, none at all.
  Target btrfs{"/data", "/data", "btrfs", "/dev/sdc", "", "", 8, 32};
  auto b = capacity::capacity_metrics(btrfs, capacity::capacity_from_statvfs(sample(1000, 0)));
  EXPECT_TRUE(b.has("fsaudit_filesystem_size_bytes", {{"target", "/data"}}));
  EXPECT_FALSE(b.has("fsaudit_filesystem_files"));
  EXPECT_FALSE(b.has("fsaudit_filesystem_files_free"));
}
