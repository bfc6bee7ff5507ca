// The canary reads its stack's model (what the filesystem reports it is) through the filesystem's own
// parser. A canary on a stack that is not whole is refused before anything is touched (no export,
// import, umount or write), with what is wrong with the pool in the reason: zfs-fuse with a mirror
// member offline, btrfs raid1 with a member missing; every member's bytes are hashed before and
// after. And the copies a cycle must find come from the model: ZFS copies=2 on one vdev is repaired.
// Real loop devices, mounts and zfs-fuse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "daemon/config/config.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/canary/identity.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::canary {
namespace {

namespace fs = std::filesystem;
using namespace fsaudit::testing;

config::Config canary_config(const fs::path& dir, const std::string& yaml_entry) {
  return config::parse_config("state_dir: " + (dir / "state").string() + "\ncanary:\n  canaries:\n" + yaml_entry,
                              "health-lab.yaml");
}

CycleReport cycle(const config::Config& cfg, const std::string& name) {
  ProcessRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  return run_cycle(cfg.canary, name, env);
}

// Digests once nothing writes any more (a fresh filesystem finishes some work on its own).
std::vector<std::string> settled(const std::vector<fs::path>& files) {
  auto now = [&] {
    ::sync();
    std::vector<std::string> d;
    for (const auto& f : files) d.push_back(digest_file(f));
    return d;
  };
  auto d = now();
  for (int i = 0; i < 20; ++i) {
    DaemonProcess::sleep_ms(1000);
    auto again = now();
    if (again == d) return d;
    d = again;
  }
  ADD_FAILURE() << "the members never settled";
  return d;
}

TEST(CanaryStackHealth, ZfsMirrorWithAMemberOfflineIsRefusedUntouched) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  TempDir dir("canary-health");
  std::vector<fs::path> vdevs = {dir / "v0.vdev", dir / "v1.vdev"};
  for (const auto& v : vdevs) {
    { std::ofstream o(v); }
    fs::resize_file(v, 96 << 20);
  }
  const std::string pool = "fsauditch" + std::to_string(::getpid());
  const fs::path mnt = dir / "mnt";
  fs::create_directories(mnt);
  ZfsPool p(pool, {"-m", mnt.string(), "mirror", vdevs[0].string(), vdevs[1].string()});
  ASSERT_TRUE(p.ok()) << p.error();
  for (int i = 0; i < 50 && !fs::exists(mnt / "."); ++i) DaemonProcess::sleep_ms(100);
  auto cfg = canary_config(dir.path(), "    - name: zm\n      fs: zfs\n      layout: mirror\n      pool: " + pool +
                                    "\n      devices: [" + vdevs[0].string() + ", " + vdevs[1].string() +
                                    "]\n      mountpoint: " + mnt.string() + "\n");
  ProcessRunner pr;
  auto in = init_canary(cfg, "zm", pr);
  ASSERT_TRUE(in) << in.error();
  must({"zpool", "offline", pool, vdevs[1].string()});
  auto before = settled(vdevs);

  auto r = cycle(cfg, "zm");
  EXPECT_EQ(r.verdict, Verdict::refused) << r.to_json();
  EXPECT_NE(r.reason.find("pool " + pool + " is DEGRADED"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(vdevs[1].string() + " OFFLINE"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.injection.has_value());
  EXPECT_EQ(r.expect, "repaired");
  // Still imported and mounted, nothing written, no cycle pending.
  EXPECT_TRUE(run({"zpool", "list", "-H", pool}).ok());
  EXPECT_TRUE(fs::exists(mnt / kSignatureFile));
  EXPECT_EQ(settled(vdevs), before);
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, "zm")));
  must({"zpool", "online", pool, vdevs[1].string()});
}

// The stack model, not the layout word, says what a cycle must find: one file vdev whose dataset has
// copies=2 keeps two copies of each block on it, and a bad copy is repaired. (The word "single" alone
// said 1 copy, so the cycle ended in error.)
TEST(CanaryStackModel, ZfsCopiesTwoOnOneVdevIsRepaired) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  TempDir dir("canary-health");
  const fs::path vdev = dir / "v0.vdev";
  { std::ofstream o(vdev); }
  fs::resize_file(vdev, 96 << 20);
  const std::string pool = "fsauditcc" + std::to_string(::getpid());
  const fs::path mnt = dir / "mnt";
  fs::create_directories(mnt);
  ZfsPool p(pool, {"-m", mnt.string(), vdev.string()});
  ASSERT_TRUE(p.ok()) << p.error();
  must({"zfs", "set", "copies=2", pool});
  for (int i = 0; i < 50 && !fs::exists(mnt / "."); ++i) DaemonProcess::sleep_ms(100);
  auto cfg = canary_config(dir.path(), "    - name: zc\n      fs: zfs\n      layout: single\n      pool: " + pool +
                                           "\n      devices: [" + vdev.string() + "]\n      mountpoint: " + mnt.string() + "\n");
  ProcessRunner pr;
  auto in = init_canary(cfg, "zc", pr);
  ASSERT_TRUE(in) << in.error();
  auto r = cycle(cfg, "zc");
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.expect, "repaired");
  EXPECT_EQ(r.expected_copies, 2u);
  EXPECT_EQ(r.copies_found, 2u);
  EXPECT_EQ(r.verdict, Verdict::repaired);
  EXPECT_TRUE(r.expectation_met);
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, "zc")));
}

TEST(CanaryStackHealth, BtrfsRaid1WithAMemberMissingIsRefusedUntouched) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
  TempDir dir("canary-health");
  LoopDevice a(dir.path(), "a.img", 128 << 20), b(dir.path(), "b.img", 128 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  must({"mkfs.btrfs", "-f", "-q", "-d", "raid1", "-m", "raid1", a.device(), b.device()});
  const fs::path mnt = dir / "mnt";
  auto cfg = canary_config(dir.path(), "    - name: br\n      fs: btrfs\n      layout: raid1\n      devices: [" + a.device() +
                                    ", " + b.device() + "]\n      mountpoint: " + mnt.string() + "\n");
  {
    Mount whole(a.device(), mnt, "btrfs", "device=" + b.device());
    ASSERT_TRUE(whole.ok()) << whole.error();
    ProcessRunner pr;
    auto in = init_canary(cfg, "br", pr);
    ASSERT_TRUE(in) << in.error();
  }
  // The kernel forgets b (it belongs to no mounted filesystem now); a mounts degraded without it.
  must({"btrfs", "device", "scan", "--forget", b.device()});
  Mount degraded(a.device(), mnt, "btrfs", "degraded");
  ASSERT_TRUE(degraded.ok()) << degraded.error();
  auto before = settled({a.backing(), b.backing()});

  auto r = cycle(cfg, "br");
  EXPECT_EQ(r.verdict, Verdict::refused) << r.to_json();
  EXPECT_NE(r.reason.find("not healthy (missing_members)"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("is missing 1 of 2 members (devid 2 missing)"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.injection.has_value());
  EXPECT_TRUE(fs::exists(mnt / kSignatureFile));
  EXPECT_EQ(settled({a.backing(), b.backing()}), before);
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, "br")));
}

}  // namespace
}  // namespace fsaudit::canary
