// Device naming against real loop devices (and a real partition on one, added with partx).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>

#include "daemon/core/block_device.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit::block {
namespace {

TEST(BlockDeviceLab, LoopDeviceAndItsPartition) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-blockdev-lab");
  testing::LoopDevice loop(dir.path(), "disk.img", 8 << 20);
  ASSERT_TRUE(loop.ok());
  HostPaths host;  // the real /dev and /sys
  const std::string name = loop.device().substr(5);  // loopN
  EXPECT_EQ(kernel_name(host, loop.device()).value(), name);
  struct stat st {};
  ASSERT_EQ(::stat(loop.device().c_str(), &st), 0);
  EXPECT_EQ(name_of_devnum(host, major(st.st_rdev), minor(st.st_rdev)).value_or(""), name);
  // udev's /dev/block/M:m link leads to the same name.
  std::string block_link = "/dev/block/" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
  if (std::filesystem::is_symlink(block_link)) {
    EXPECT_EQ(kernel_name(host, block_link).value(), name);
  }
  EXPECT_EQ(parent_disk(host, name), name);

  // One MBR partition (type 0x83, LBA 2048, 4096 sectors), then ask the kernel to add it.
  {
    std::fstream f(loop.backing(), std::ios::in | std::ios::out | std::ios::binary);
    unsigned char entry[16] = {0, 0, 0, 0, 0x83, 0, 0, 0, 0x00, 0x08, 0, 0, 0x00, 0x10, 0, 0};
    f.seekp(446);
    f.write(reinterpret_cast<const char*>(entry), sizeof entry);
    f.seekp(510);
    f.write("\x55\xAA", 2);
  }
  auto add = testing::run({"partx", "-a", loop.device()});
  ASSERT_TRUE(add.ok()) << add.err;
  struct PartGuard {
    std::string dev;
    ~PartGuard() { testing::run({"partx", "-d", dev}); }
  } guard{loop.device()};
  const std::string part = name + "p1";
  for (int i = 0; i < 50 && !std::filesystem::exists("/sys/class/block/" + part); ++i) ::usleep(20000);
  ASSERT_TRUE(std::filesystem::exists("/sys/class/block/" + part));
  EXPECT_EQ(parent_disk(host, part), name);
  if (std::filesystem::exists("/dev/" + part)) {
    EXPECT_EQ(kernel_name(host, "/dev/" + part).value(), part);
  }
}

}  // namespace
}  // namespace fsaudit::block
