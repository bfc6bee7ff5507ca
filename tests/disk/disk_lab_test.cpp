// Disk identity and the `disk` label on real loop devices (a btrfs raid1 over a partition of one
// loop device and a whole second one: the walk must end at the two loop disks, each named once,
// with its backing file as identity, and the btrfs member series must carry them), and the real
// smartctl on a loop device.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <set>

#include "daemon/config/config.hpp"
#include "daemon/core/disk_identity.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/disk/probe.hpp"
#include "probes/zfs/probe.hpp"
#include "tests/support/fs_lab.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit::disk {
namespace {

namespace fs = std::filesystem;

// One MBR partition (type 0x83, LBA 2048 on), then the kernel is asked to add it (as losetup -P does).
struct Partitioned {
  std::string dev;
  bool ok = false;
  Partitioned(const testing::LoopDevice& loop, std::uint32_t sectors) : dev(loop.device()) {
    {
      std::fstream f(loop.backing(), std::ios::in | std::ios::out | std::ios::binary);
      unsigned char entry[16] = {0, 0, 0, 0, 0x83, 0, 0, 0, 0x00, 0x08, 0, 0};
      for (int i = 0; i < 4; ++i) entry[12 + i] = static_cast<unsigned char>(sectors >> (8 * i));
      f.seekp(446);
      f.write(reinterpret_cast<const char*>(entry), sizeof entry);
      f.seekp(510);
      f.write("\x55\xAA", 2);
    }
    ok = testing::run({"partx", "-a", dev}).ok();
    auto part = "/sys/class/block/" + dev.substr(5) + "p1";
    for (int i = 0; i < 100 && !fs::exists(part); ++i) ::usleep(20000);
    ok = ok && fs::exists(part);
  }
  ~Partitioned() { testing::run({"partx", "-d", dev}); }
};

TEST(DiskLab, BtrfsOverAPartitionAndAWholeLoopDevice) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("partx", "util-linux"));
  testing::TempDir dir("fsaudit-disk-lab");
  testing::LoopDevice a(dir.path(), "a.img", 320 << 20), b(dir.path(), "b.img", 300 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  Partitioned pa(a, (300 << 20) / 512);
  ASSERT_TRUE(pa.ok);
  const std::string ka = a.device().substr(5), kb = b.device().substr(5), part = ka + "p1";
  // devtmpfs makes the partition's node; mkfs needs it.
  for (int i = 0; i < 100 && !fs::exists("/dev/" + part); ++i) ::usleep(20000);
  ASSERT_TRUE(fs::exists("/dev/" + part));
  auto mk = testing::run({"mkfs.btrfs", "-f", "-d", "raid1", "-m", "raid1", "/dev/" + part, b.device()});
  ASSERT_TRUE(mk.ok()) << mk.err;
  testing::run({"btrfs", "device", "scan", "/dev/" + part, b.device()});
  testing::Mount m("/dev/" + part, dir.path() / "mnt", "btrfs");
  ASSERT_TRUE(m.ok()) << m.error();

  HostPaths host;
  EXPECT_EQ(block::whole_disks(host, "/dev/" + part), std::vector<std::string>{ka});
  EXPECT_EQ(block::disk_label(host, part), ka);
  auto t = testing::live_target(m.dir().string());
  ASSERT_TRUE(t);
  auto disks = disks_of_targets(host, {*t});
  EXPECT_EQ(disks.size(), 2u);
  EXPECT_EQ(disks[ka], std::set<std::string>{t->name});
  EXPECT_EQ(disks[kb], std::set<std::string>{t->name});
  auto id = block::identify(host, ka);
  EXPECT_EQ(id.transport, "loop");
  EXPECT_EQ(fs::path(id.backing_file), a.backing());

  // The btrfs probe's member series name the partition and carry its whole disk (every member's
  // missing gauge: btrfs.detail: full; by default only a missing member's).
  auto cfg = config::Config{};
  cfg.btrfs.detail = "full";
  auto probe = btrfs::make_btrfs_probe(cfg);
  auto r = testing::run_probe(*probe, m.dir().string());
  EXPECT_TRUE(r.metrics.has("fsaudit_btrfs_device_missing", {{"device", part}, {"disk", ka}}))
      << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_btrfs_device_missing", {{"device", kb}, {"disk", kb}})) << r.reason;
}

// A zfs-fuse mirror over two loop devices: the dataset's disks are its pool's members (the disk probe
// asks `zpool status` for them), and the zfs probe's vdev series carry each member's disk.
TEST(DiskLab, ZfsMirrorOverTwoLoopDevicesIsOnItsDisks) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  testing::TempDir dir("fsaudit-disk-zfs-lab");
  testing::LoopDevice a(dir.path(), "a.img", 96 << 20), b(dir.path(), "b.img", 96 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  testing::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  const std::string pool = "fsauditdisk" + std::to_string(::getpid());
  testing::ZfsPool p(pool, {"-m", (dir.path() / "mnt").string(), "mirror", a.device(), b.device()});
  ASSERT_TRUE(p.ok()) << p.error();
  std::optional<Target> t;
  for (int i = 0; i < 50 && !(t = testing::live_target((dir.path() / "mnt").string())); ++i) ::usleep(100000);
  ASSERT_TRUE(t) << "zfs-fuse did not mount " << pool;
  const std::string ka = a.device().substr(5), kb = b.device().substr(5);

  config::Config cfg;
  cfg.targets.include = {t->name};
  cfg.targets.fstypes = {t->fstype};
  ProcessRunner runner;
  HostPaths host;
  ToolPaths tools;
  ProbeContext ctx{host, runner, SystemClock::instance(), tools, "/nonexistent", {},
                   SystemClock::instance().now() + std::chrono::seconds(60)};
  auto r = make_disk_probe(cfg)->run(Target::host(), ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_target_disk_info", {{"target", t->name}, {"disk", ka}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_target_disk_info", {{"target", t->name}, {"disk", kb}}));
  EXPECT_TRUE(r.metrics.has("fsaudit_disk_info", {{"disk", ka}, {"backing_file", a.backing().string()}}));

  auto z = zfs::make_zfs_probe(cfg)->run(Target::host(), ctx);
  ASSERT_EQ(z.outcome, Outcome::ok) << z.reason;
  EXPECT_TRUE(z.metrics.has("fsaudit_zfs_vdev_state", {{"pool", pool}, {"vdev", ka}, {"disk", ka}}))
      << testing::run({"zpool", "status", pool}).out;  // zfs-fuse names a member by its kernel name
  EXPECT_TRUE(z.metrics.has("fsaudit_zfs_vdev_state", {{"pool", pool}, {"vdev", kb}, {"disk", kb}}));
}

// The real smartctl on a real loop device under an ext4 mount: unsupported, asked once, no failure.
class CountingRunner final : public CommandRunner {
 public:
  CommandResult run(const CommandSpec& s, std::stop_token st = {}) override {
    if (!s.argv.empty() && fs::path(s.argv[0]).filename() == "smartctl") ++smartctl;
    return real.run(s, st);
  }
  ProcessRunner real;
  int smartctl = 0;
};

TEST(SmartLab, RealSmartctlOnALoopDeviceSaysUnsupportedOnce) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("smartctl", "smartmontools"));
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("mkfs.ext4", "e2fsprogs"));
  testing::TempDir dir("fsaudit-smart-lab");
  testing::LoopDevice loop(dir.path(), "disk.img", 64 << 20);
  ASSERT_TRUE(loop.ok());
  ASSERT_TRUE(testing::run({"mkfs.ext4", "-q", "-F", loop.device()}).ok());
  testing::Mount m(loop.device(), dir.path() / "mnt", "ext4");
  ASSERT_TRUE(m.ok()) << m.error();
  config::Config cfg;
  cfg.targets.include = {m.dir().string()};
  auto probe = make_smart_probe(cfg);
  CountingRunner runner;
  HostPaths host;
  ToolPaths tools;
  const std::string disk = loop.device().substr(5);
  for (int i = 0; i < 2; ++i) {
    ProbeContext ctx{host, runner, SystemClock::instance(), tools, "/nonexistent", {},
                     SystemClock::instance().now() + std::chrono::seconds(60)};
    auto r = probe->run(Target::host(), ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_state", {{"disk", disk}, {"state", "unsupported"}}), 1);
  }
  EXPECT_EQ(runner.smartctl, 1);
}

}  // namespace
}  // namespace fsaudit::disk
