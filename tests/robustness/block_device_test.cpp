// Device path -> kernel name and partition -> disk, on a fake /dev + /sys tree.
#include <gtest/gtest.h>

#include <filesystem>

#include "daemon/core/block_device.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::block {
namespace {

namespace fs = std::filesystem;

struct FakeHost {
  testing::TempDir dir{"fsaudit-blockdev"};
  HostPaths host = HostPaths::under(dir.path());
  FakeHost() {
    for (auto d : {"dev/disk/by-id", "dev/disk/by-partlabel", "dev/mapper", "dev/block",
                   "sys/devices/pci0000:00/block/sda/sda1", "sys/devices/pci0000:00/block/nvme0n1/nvme0n1p2",
                   "sys/devices/virtual/block/dm-0", "sys/class/block", "sys/dev/block"})
      fs::create_directories(dir / d);
    for (auto n : {"sda", "sda1", "dm-0", "nvme0n1p2", "sdb1"}) testing::write_text(dir / "dev" / n, "");
    testing::write_text(dir / "sys/devices/pci0000:00/block/sda/sda1/partition", "1\n");
    testing::write_text(dir / "sys/devices/pci0000:00/block/nvme0n1/nvme0n1p2/partition", "2\n");
    fs::create_directory_symlink("../../devices/pci0000:00/block/sda/sda1", dir / "sys/class/block/sda1");
    fs::create_directory_symlink("../../devices/pci0000:00/block/sda", dir / "sys/class/block/sda");
    fs::create_directory_symlink("../../devices/pci0000:00/block/nvme0n1/nvme0n1p2", dir / "sys/class/block/nvme0n1p2");
    fs::create_directory_symlink("../../devices/virtual/block/dm-0", dir / "sys/class/block/dm-0");
    fs::create_directory_symlink("../../devices/virtual/block/dm-0", dir / "sys/dev/block/254:0");
    fs::create_symlink("../../sda1", dir / "dev/disk/by-id/ata-DISK_SERIAL-part1");
    fs::create_symlink("../../nvme0n1p2", dir / "dev/disk/by-partlabel/data");
    fs::create_symlink("../dm-0", dir / "dev/mapper/root");
    fs::create_symlink("/dev/sdb1", dir / "dev/disk/by-id/absolute-link");   // absolute: read under devfs
    fs::create_symlink("../../gone", dir / "dev/disk/by-id/dangling");
    fs::create_symlink("loop-b", dir / "dev/mapper/loop-a");
    fs::create_symlink("loop-a", dir / "dev/mapper/loop-b");
  }
};

TEST(BlockDevice, KernelNameFollowsUdevAndMapperLinks) {
  FakeHost f;
  EXPECT_EQ(kernel_name(f.host, "sda1").value(), "sda1");
  EXPECT_EQ(kernel_name(f.host, "/dev/sda1").value(), "sda1");
  EXPECT_EQ(kernel_name(f.host, "/dev/disk/by-id/ata-DISK_SERIAL-part1").value(), "sda1");
  EXPECT_EQ(kernel_name(f.host, "/dev/disk/by-partlabel/data").value(), "nvme0n1p2");
  EXPECT_EQ(kernel_name(f.host, "/dev/mapper/root").value(), "dm-0");
  EXPECT_EQ(kernel_name(f.host, "/dev/disk/by-id/absolute-link").value(), "sdb1");
}

TEST(BlockDevice, BrokenPathsAreErrorsThatSayWhy) {
  FakeHost f;
  auto d = kernel_name(f.host, "/dev/disk/by-id/dangling");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("dangling"), std::string::npos) << d.error();
  auto loop = kernel_name(f.host, "/dev/mapper/loop-a");
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().find("symbolic links"), std::string::npos) << loop.error();
  EXPECT_FALSE(kernel_name(f.host, "/dev/nothing").ok());
  EXPECT_FALSE(kernel_name(f.host, "/srv/disk.img").ok());
  EXPECT_EQ(kernel_name_or_last(f.host, "/dev/disk/by-id/dangling"), "dangling");
  // For labels of a member that went away: the device the link pointed to.
  EXPECT_EQ(kernel_name_or_target(f.host, "/dev/disk/by-id/dangling"), "gone");
  EXPECT_EQ(kernel_name_or_target(f.host, "/dev/mapper/root"), "dm-0");
  EXPECT_EQ(kernel_name_or_target(f.host, "/srv/disk.img"), "disk.img");
}

TEST(BlockDevice, DevnumAndParentDisk) {
  FakeHost f;
  EXPECT_EQ(name_of_devnum(f.host, 254, 0).value_or(""), "dm-0");
  EXPECT_FALSE(name_of_devnum(f.host, 8, 99));
  EXPECT_EQ(parent_disk(f.host, "sda1"), "sda");
  EXPECT_EQ(parent_disk(f.host, "nvme0n1p2"), "nvme0n1");
  EXPECT_EQ(parent_disk(f.host, "sda"), "sda");
  EXPECT_EQ(parent_disk(f.host, "dm-0"), "dm-0");
  // Not in sysfs: the kernel's naming rules.
  EXPECT_EQ(parent_disk(f.host, "vdb12"), "vdb");
  EXPECT_EQ(parent_disk(f.host, "mmcblk0p1"), "mmcblk0");
  EXPECT_EQ(parent_disk(f.host, "loop3p1"), "loop3");
  EXPECT_EQ(parent_disk(f.host, "loop3"), "loop3");
  EXPECT_EQ(parent_disk(f.host, "nvme1n1"), "nvme1n1");
  EXPECT_EQ(parent_disk(f.host, "md127"), "md127");
}

}  // namespace
}  // namespace fsaudit::block
