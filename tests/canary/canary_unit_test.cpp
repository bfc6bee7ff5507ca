// Unit tests for the canary: config, verdict expectations, pattern, parsers, mount-table safety
// rules, raw writer refusals and the io_uring scanner (on regular files, no root needed).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <thread>
#include <sstream>
#include <nlohmann/json.hpp>
#include <limits>

#include "daemon/config/config.hpp"
#include "daemon/core/block_device.hpp"
#include "probes/btrfs/canary_ops.hpp"
#include "probes/btrfs/parse.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/canary/lab.hpp"
#include "probes/canary/lock.hpp"
#include "probes/canary/helper_protocol.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/pattern.hpp"
#include "probes/canary/probe.hpp"
#include "probes/canary/raw_writer.hpp"
#include "probes/canary/safety.hpp"
#include "probes/canary/scanner.hpp"
#include "probes/canary/stack.hpp"
#include "probes/zfs/canary_ops.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::canary {
namespace {

using testing::digest_file;
using testing::TempDir;

config::Config parse(const std::string& yaml) { return config::parse_config(yaml, "test.yaml"); }

const char* kTwoCanaries = R"(
state_dir: /var/lib/fsaudit-test
canary:
  canaries:
    - name: mirror
      fs: btrfs
      layout: raid1
      devices: [/dev/disk/by-id/ata-A-part9, /dev/disk/by-id/ata-B-part9]
      mountpoint: /srv/canary-btrfs
      interval: 12h
      window: "Sat 01:00-06:00"
      file_blocks: 128
    - name: tank-canary
      fs: zfs
      layout: mirror
      pool: canarypool
      devices: [/dev/sdc9, /dev/sdd9]
      mountpoint: /canarypool
      expect: detected
  lab:
    enabled: true
    stacks: [btrfs-raid1, xfs]
)";

TEST(CanaryConfig, ParsesCanariesAndLab) {
  auto c = parse(kTwoCanaries);
  ASSERT_EQ(c.canary.canaries.size(), 2u);
  const auto& m = c.canary.canaries[0];
  EXPECT_EQ(m.name, "mirror");
  EXPECT_EQ(m.fs, "btrfs");
  EXPECT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.interval, std::chrono::hours(12));
  EXPECT_FALSE(m.window.always);
  EXPECT_EQ(m.file_blocks, 128u);
  EXPECT_EQ(m.expect, "");
  EXPECT_EQ(c.canary.canaries[1].pool, "canarypool");
  EXPECT_EQ(c.canary.canaries[1].expect, "detected");
  EXPECT_TRUE(c.canary.lab.enabled);
  EXPECT_EQ(c.canary.lab.stacks, (std::vector<std::string>{"btrfs-raid1", "xfs"}));
  EXPECT_NE(c.canary.find("tank-canary"), nullptr);
  EXPECT_EQ(c.canary.find("nope"), nullptr);
}

TEST(CanaryConfig, DefaultsAreEmptyAndDaily) {
  auto c = parse("{}");
  EXPECT_TRUE(c.canary.canaries.empty());
  EXPECT_FALSE(c.canary.lab.enabled);
  auto one = parse("canary: {canaries: [{name: a, fs: xfs, devices: [/dev/sdz1], mountpoint: /srv/a}]}");
  EXPECT_EQ(one.canary.canaries.at(0).interval, std::chrono::hours(24));
  EXPECT_TRUE(one.canary.canaries.at(0).window.always);
}

void expect_config_error(const std::string& yaml, const std::string& fragment) {
  try {
    parse(yaml);
    ADD_FAILURE() << "accepted: " << yaml;
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The lab's stacks are one table: every one of them is a stack lab mode accepts, and the error for
// an unknown one names them all.
TEST(CanaryConfig, LabStacksAreTheLabTable) {
  std::string all;
  for (const auto& s : config::canary_lab_stacks()) {
    auto c = parse("canary: {lab: {enabled: true, stacks: [" + s.name + "]}}");
    EXPECT_EQ(c.canary.lab.stacks, std::vector<std::string>{s.name});
    EXPECT_EQ(config::find_lab_stack(s.name), &s);
    all += (all.empty() ? "" : ", ") + s.name;
  }
  EXPECT_EQ(config::find_lab_stack("btrfs-raid5"), nullptr);
  expect_config_error("canary: {lab: {stacks: [btrfs-raid5]}}", "choose from " + all);
}

TEST(CanaryConfig, RejectsBadEntries) {
  expect_config_error("canary: {canaries: [{name: a, fs: ntfs, devices: [/dev/x], mountpoint: /m}]}", "ntfs");
  expect_config_error("canary: {canaries: [{name: a, fs: zfs, devices: [/dev/x], mountpoint: /m}]}", "pool");
  expect_config_error("canary: {canaries: [{name: a, fs: xfs, devices: [], mountpoint: /m}]}", "devices");
  expect_config_error("canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /}]}", "mountpoint");
  expect_config_error("canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /m, window: Someday}]}", "window");
  expect_config_error("canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /m, intervall: 1h}]}", "interval");
  expect_config_error(
      "canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /m}, {name: a, fs: xfs, devices: [/dev/y], mountpoint: /n}]}",
      "duplicate");
  expect_config_error("canary: {lab: {stacks: [btrfs-raid5]}}", "btrfs-raid5");
}

TEST(CanaryConfig, OverlappingCanariesAreRejected) {
  expect_config_error(
      "canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /m}, {name: b, fs: ext4, devices: [/dev/x], mountpoint: /n}]}",
      "also a member of canary \"a\"");
  expect_config_error(
      "canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /m}, {name: b, fs: ext4, devices: [/dev/y], mountpoint: /m}]}",
      "mount point /m");
  expect_config_error(
      "canary: {canaries: [{name: a, fs: zfs, pool: p, devices: [/dev/x], mountpoint: /m}, {name: b, fs: zfs, pool: p, devices: [/dev/y], mountpoint: /n}]}",
      "pool p");
  EXPECT_EQ(parse("canary: {canaries: [{name: a, fs: xfs, devices: [/dev/x], mountpoint: /m}, {name: b, fs: ext4, devices: [/dev/y], mountpoint: /n}]}")
                .canary.canaries.size(),
            2u);
}

// The expectation and the copies to find come from what the filesystem reports (the stack model,
// read through zpool status and zfs get), not from the layout word: a single vdev with copies=2
// keeps 2 copies and repairs, where the word "single" said 1 copy, detected.
TEST(CanaryExpectation, DerivedFromTheStackNotTheLayoutWord) {
  auto cfg = parse("canary: {canaries: [{name: c, fs: zfs, layout: single, pool: fxstkc2, devices: [/dev/x], mountpoint: /m}]}");
  testing::FakeRunner runner;
  runner.answer("zpool status fxstkc2", testing::fixture("zfs/zfs-fuse-status-single-vdev-copies-2.txt"));
  runner.answer("zfs get -Hp copies,checksum fxstkc2", testing::fixture("zfs/zfs-fuse-get-Hp-copies-checksum-copies-2.txt"));
  auto ops = make_canary_ops(cfg.canary.canaries[0], StackEnv{runner, cfg.tools, {}}, cfg.host);
  ASSERT_TRUE(ops.ok()) << ops.error();
  auto m = (*ops)->model();
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->copies, 2u);
  EXPECT_EQ(m->expectation(), stack::Expectation::repaired);
  EXPECT_TRUE(stack::layout_matches("zfs", "single", m->layout));
  EXPECT_FALSE(stack::layout_matches("zfs", "mirror", m->layout));
  // A status that names another pool is not this canary's.
  runner.answer("zpool status fxstkc2", testing::fixture("zfs/zfs-fuse-status-three-way-mirror.txt"));
  auto other = (*ops)->model();
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("printed no pool fxstkc2"), std::string::npos) << other.error();
  // XFS and ext4: one copy, blind.
  auto x = parse("canary: {canaries: [{name: x, fs: xfs, devices: [/dev/x], mountpoint: /m}]}");
  auto xops = make_canary_ops(x.canary.canaries[0], StackEnv{runner, x.tools, {}}, x.host);
  ASSERT_TRUE(xops.ok()) << xops.error();
  auto xm = (*xops)->model();
  ASSERT_TRUE(xm.ok());
  EXPECT_EQ(xm->copies, 1u);
  EXPECT_EQ(xm->expectation(), stack::Expectation::blind);
}

// A pool that is resilvering is refused before anything is touched: the only commands run are the
// reads of its state (no export, import, umount), and the reason says what is wrong with the pool
// (here also when its dataset's properties cannot be read: the fake answers no zfs get).
TEST(CanaryRefusal, ResilveringPoolIsRefusedBeforeAnythingIsTouched) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() +
                   "\ncanary: {canaries: [{name: c, fs: zfs, layout: raidz1, pool: bulk, devices: [/dev/null-nonexistent], "
                   "mountpoint: /srv/nowhere}]}\n");
  testing::FakeRunner runner;
  runner.answer("zpool status bulk",
                testing::fixture("written/zfs/zpool-status-openzfs-resilver-in-progress-slash-total-replacing-resilvering.txt"));
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto r = run_cycle(cfg.canary, "c", env);
  EXPECT_EQ(r.verdict, Verdict::refused) << r.to_json();
  EXPECT_NE(r.reason.find("resilvering"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("pool bulk is DEGRADED"), std::string::npos) << r.reason;
  EXPECT_EQ(r.expect, "repaired");  // from the design: a raidz1 repairs once whole
  EXPECT_FALSE(r.injection.has_value());
  // Reads only: its state and its dataset's properties.
  for (const auto& c : runner.calls) EXPECT_TRUE(c.starts_with("zpool status") || c.starts_with("zfs get")) << c;
  EXPECT_EQ(runner.count("zpool status bulk"), 1);
  EXPECT_FALSE(std::filesystem::exists(inflight_path(cfg.state_dir, "c")));
}

// The operations are chosen once, by the canonical filesystem type: zfs-fuse's "fuse.zfs" is ZFS
// (export/import, not umount/mount), XFS and ext4 get the plain ones, and an unknown filesystem is
// refused with its name, not run with another filesystem's commands.
TEST(CanaryOpsFactory, PicksTheOperationsOfEachFilesystemAndRefusesAnUnknownOne) {
  testing::FakeRunner runner;
  ToolPaths tools;
  auto ops_for = [&](const std::string& fs) {
    config::CanaryTarget t;
    t.name = "c";
    t.fs = fs;
    t.pool = "cpool";
    t.devices = {"/dev/x", "/dev/y"};
    t.mountpoint = "/srv/c";
    return make_canary_ops(t, StackEnv{runner, tools, {}}, HostPaths{});
  };
  auto b = ops_for("btrfs");
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_NE(dynamic_cast<btrfs::CanaryOps*>(b->get()), nullptr);
  EXPECT_TRUE((*b)->checksumming());
  EXPECT_TRUE((*b)->lists_members());
  for (const char* zfs_fs : {"zfs", "fuse.zfs"}) {
    auto z = ops_for(zfs_fs);
    ASSERT_TRUE(z.ok()) << zfs_fs << ": " << z.error();
    EXPECT_NE(dynamic_cast<zfs::CanaryOps*>(z->get()), nullptr) << zfs_fs;
    EXPECT_EQ((*z)->target().fs, "zfs");
    EXPECT_TRUE((*z)->checksumming());
    EXPECT_FALSE((*z)->fsync_before_offline());
    runner.answer("zpool export cpool", "");
    EXPECT_TRUE((*z)->take_offline().ok());
  }
  // Both ZFS spellings took the pool offline with zpool export, never with umount.
  EXPECT_EQ(runner.count("zpool export cpool"), 2);
  EXPECT_EQ(runner.count("umount /srv/c"), 0);
  for (const char* plain : {"xfs", "ext4"}) {
    auto p = ops_for(plain);
    ASSERT_TRUE(p.ok()) << plain << ": " << p.error();
    EXPECT_NE(dynamic_cast<PlainOps*>(p->get()), nullptr) << plain;
    EXPECT_FALSE((*p)->checksumming());
    EXPECT_FALSE((*p)->lists_members());
    EXPECT_FALSE((*p)->scrub().supported);
  }
  auto unknown = ops_for("ntfs");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("fs \"ntfs\" has no canary operations"), std::string::npos) << unknown.error();
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

// Lab mode's recipes are each filesystem's own (CanaryOps::build_lab): the lab only makes what a recipe
// asks for. Each recipe asks for its members, makes its filesystem or pool with its own tool, and
// mounts at the canary's mount point; what it built is then the ops' target. The real builds are the
// lab tests (CanaryLab, StackVerdict), on loop devices and zfs-fuse.
TEST(CanaryOpsFactory, EachFilesystemBuildsItsOwnLabStack) {
  struct FakeLab : LabHost {
    std::vector<std::string> log;
    int loops = 0;
    CommandResult run(std::vector<std::string> argv, int) override {
      log.push_back(joined(argv, " "));
      CommandResult r;
      r.exit_code = 0;
      r.exited = true;
      return r;
    }
    Result<std::string> image(const std::string& name, std::uint64_t size) override {
      log.push_back("image " + name + " " + std::to_string(size >> 20) + "M");
      return "/lab/" + name;
    }
    Result<std::string> loop_device(const std::string& name, std::uint64_t size) override {
      log.push_back("loop " + name + " " + std::to_string(size >> 20) + "M");
      return "/dev/loop" + std::to_string(loops++);
    }
    Result<void> mount(const std::string& dev, const std::string& mnt, const std::vector<std::string>& o) override {
      log.push_back("mount " + joined(o, " ") + " " + dev + " " + mnt);
      return {};
    }
    Result<void> start_zfs() override {
      log.push_back("start zfs");
      return {};
    }
    std::string new_pool_name() override { return "fsauditlab12"; }
    void created_pool(const std::string& p) override { log.push_back("pool " + p); }
    Result<void> wait_mounted(const std::string& m) override {
      log.push_back("wait " + m);
      return {};
    }
  };
  testing::FakeRunner runner;
  ToolPaths tools;
  const LabSpec spec{"s", "", 1, 1, 128ull << 20, 320ull << 20};
  auto build = [&](const std::string& fs, LabSpec sp) {
    config::CanaryTarget t;
    t.name = "lab-s";
    t.fs = fs;
    t.mountpoint = "/lab/mnt/s";
    auto ops = make_canary_ops(t, StackEnv{runner, tools, {}}, HostPaths{});
    EXPECT_TRUE(ops.ok()) << fs;
    FakeLab lab;
    auto r = (*ops)->build_lab(lab, sp);
    EXPECT_TRUE(r.ok()) << fs << ": " << (r.ok() ? "" : r.error());
    return std::pair{lab.log, (*ops)->target()};
  };
  if (!find_tool("mkfs.xfs").empty()) {
    auto [log, t] = build("xfs", spec);
    EXPECT_EQ(joined(log, "|"), "loop s.img 320M|mkfs.xfs -f -q -L fsaudit-lab /dev/loop0|mount -t xfs /dev/loop0 /lab/mnt/s");
    EXPECT_EQ(t.devices, std::vector<std::string>{"/dev/loop0"});
  }
  if (!find_tool("mkfs.ext4").empty()) {
    auto [log, t] = build("ext4", spec);
    EXPECT_EQ(joined(log, "|"), "loop s.img 128M|mkfs.ext4 -F -q -L fsaudit-lab -E lazy_itable_init=0,lazy_journal_init=0 "
                              "/dev/loop0|mount -t ext4 /dev/loop0 /lab/mnt/s");
  }
  if (!find_tool("mkfs.btrfs").empty()) {
    auto [log, t] = build("btrfs", LabSpec{"r1", "raid1", 2, 1, 128ull << 20, 0});
    EXPECT_EQ(joined(log, "|"), "loop r1-0.img 128M|loop r1-1.img 128M|mkfs.btrfs -f -q -L fsaudit-lab-r1 -d raid1 -m raid1 "
                              "/dev/loop0 /dev/loop1|mount -t btrfs -o device=/dev/loop1 /dev/loop0 /lab/mnt/s");
    EXPECT_EQ(t.devices, (std::vector<std::string>{"/dev/loop0", "/dev/loop1"}));
    // single data keeps its metadata dup; dup needs 256 MiB.
    auto [log1, t1] = build("btrfs", LabSpec{"d", "dup", 1, 1, 128ull << 20, 0});
    EXPECT_EQ(log1.at(0), "loop d-0.img 256M");
    auto [log2, t2] = build("btrfs", LabSpec{"o", "single", 1, 1, 128ull << 20, 0});
    EXPECT_NE(log2.at(1).find("-d single -m dup"), std::string::npos) << log2.at(1);
  }
  auto [zlog, zt] = build("zfs", LabSpec{"m", "mirror", 2, 2, 128ull << 20, 0});
  EXPECT_EQ(joined(zlog, "|"), "start zfs|image m-0.vdev 64M|image m-1.vdev 64M|zpool create -f -m /lab/mnt/s fsauditlab12 "
                             "mirror /lab/m-0.vdev /lab/m-1.vdev|pool fsauditlab12|zfs set copies=2 fsauditlab12|wait /lab/mnt/s");
  EXPECT_EQ(zt.pool, "fsauditlab12");
  EXPECT_EQ(zt.devices, (std::vector<std::string>{"/lab/m-0.vdev", "/lab/m-1.vdev"}));
}

// A pool built on /dev/disk/by-id names (as most are) lists its members by those names: the canary
// resolves them through the host's /dev to the devices the config names, for the member check and
// for the error counters alike.
TEST(CanaryOpsZfs, MembersNamedByIdResolveToTheirDevices) {
  testing::TempDir d("canary-unit");
  auto host = HostPaths::under(d.path());
  std::filesystem::create_directories(host.dev("disk/by-id"));
  testing::write_text(host.dev("sdq1"), "");
  testing::write_text(host.dev("sdr1"), "");
  std::filesystem::create_symlink("../../sdq1", host.dev("disk/by-id/ata-FAKE_A-part1"));
  std::filesystem::create_symlink("../../sdr1", host.dev("disk/by-id/ata-FAKE_B-part1"));
  const std::string status =
      "  pool: tank\n state: ONLINE\n scrub: none requested\nconfig:\n\n"
      "\tNAME                  STATE     READ WRITE CKSUM\n"
      "\ttank                  ONLINE       0     0     0\n"
      "\t  mirror-0            ONLINE       0     0     0\n"
      "\t    ata-FAKE_A-part1  ONLINE       0     0     3\n"
      "\t    ata-FAKE_B-part1  ONLINE       0     0     0\n\n"
      "errors: No known data errors\n";
  testing::FakeRunner runner;
  runner.answer("zpool status -P tank", status);
  runner.answer("zpool status tank", status);
  ToolPaths tools;
  config::CanaryTarget t;
  t.name = "c";
  t.fs = "zfs";
  t.pool = "tank";
  t.mountpoint = "/tank";
  t.devices = {host.dev("sdq1").string(), host.dev("sdr1").string()};
  auto ops = make_canary_ops(t, StackEnv{runner, tools, {}}, host);
  ASSERT_TRUE(ops.ok()) << ops.error();
  auto m = (*ops)->members();
  ASSERT_TRUE(m.ok()) << m.error();
  auto canon = [](const std::filesystem::path& p) { return std::filesystem::canonical(p).string(); };
  EXPECT_EQ(*m, (std::vector<std::string>{canon(host.dev("sdq1")), canon(host.dev("sdr1"))}));
  auto c = (*ops)->counters();
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->per_device.at(canon(host.dev("sdq1"))), 3u);
  EXPECT_EQ(c->checksum, 3u);
}

TEST(CanaryExpectation, MetOrNot) {
  EXPECT_TRUE(expectation_met("repaired", "repaired"));
  EXPECT_FALSE(expectation_met("repaired", "silent"));  // the regression that must page
  EXPECT_FALSE(expectation_met("repaired", "detected"));
  EXPECT_FALSE(expectation_met("repaired", "unverified"));
  EXPECT_TRUE(expectation_met("detected", "detected"));
  EXPECT_TRUE(expectation_met("detected", "repaired"));
  EXPECT_FALSE(expectation_met("detected", "silent"));
  EXPECT_TRUE(expectation_met("blind", "silent"));  // standing warning, not a page
  EXPECT_FALSE(expectation_met("blind", "error"));
  EXPECT_FALSE(expectation_met("repaired", "refused"));
  EXPECT_FALSE(expectation_met("repaired", "not_injectable"));
}

TEST(CanaryPattern, BlocksAreUniqueAndRecognisable) {
  PatternKey k{0x1234, 0xabcdef};
  auto a = make_block(k, 0, 4096), b = make_block(k, 1, 4096);
  EXPECT_NE(a, b);
  EXPECT_EQ(header_index(a.data(), k.nonce), std::optional<std::uint64_t>(0));
  EXPECT_EQ(header_index(b.data(), k.nonce), std::optional<std::uint64_t>(1));
  EXPECT_EQ(header_index(b.data(), k.nonce + 1), std::nullopt);
  PatternKey k2{0x9999, 0xabcdef};
  EXPECT_NE(make_block(k2, 1, 4096), b);  // keyed
  EXPECT_EQ(make_block(k, 1, 4096), b);   // deterministic
  EXPECT_EQ(from_hex(to_hex(b)).value(), b);
  EXPECT_EQ(from_hex("zz"), std::nullopt);
}

TEST(CanaryParsers, BtrfsDeviceStatsFromFixtures) {
  auto one = btrfs::parse_device_stats(testing::fixture("written/btrfs/device-stats-dm-corruption-errs-412.txt"));
  ASSERT_TRUE(one) << one.error();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].device, "/dev/mapper/cryptdata");
  EXPECT_EQ((*one)[0].errors.corruption, 412u);
  auto two = btrfs::parse_device_stats(testing::fixture("written/btrfs/device-stats-raid1-nvme-large-counters.txt"));
  ASSERT_TRUE(two) << two.error();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].device, "/dev/nvme4n1p3");
  EXPECT_EQ((*two)[1].errors.read, 102774519u);
  EXPECT_EQ((*two)[1].errors.corruption, 1589u);
  EXPECT_EQ((*two)[0].errors.corruption, 0u);
  EXPECT_FALSE(btrfs::parse_device_stats("ERROR: not a btrfs filesystem"));
}

TEST(CanaryParsers, BtrfsShowDevices) {
  // Captured on this machine: btrfs filesystem show of a 2-device raid1 loop lab (btrfs-progs v6.2).
  const char* text =
      "Label: 'fsaudit-lab-btrfs-raid1'  uuid: 4a1d0f36-3c86-4d4b-9a49-0d6bb3b7c0a2\n"
      "\tTotal devices 2 FS bytes used 144.00KiB\n"
      "\tdevid    1 size 128.00MiB used 32.00MiB path /dev/loop3\n"
      "\tdevid    2 size 128.00MiB used 32.00MiB path /dev/loop4\n\n";
  EXPECT_EQ(btrfs::parse_filesystem_show_devices(text), (std::vector<std::string>{"/dev/loop3", "/dev/loop4"}));
}

// ---- mount-table safety rules
std::vector<MountEntry> mounts(const std::string& text) { return parse_mountinfo(text).value(); }

DeviceIdentity blockdev(const std::string& path, unsigned maj, unsigned min) {
  DeviceIdentity d;
  d.path = d.resolved = path;
  d.kind = DeviceKind::loop;
  d.major = maj;
  d.minor = min;
  return d;
}

config::CanaryTarget target(const std::string& fs, const std::string& mnt) {
  config::CanaryTarget t;
  t.name = "c";
  t.fs = fs;
  t.mountpoint = mnt;
  return t;
}

const char* kBase =
    "22 1 252:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "40 22 7:5 / /srv/canary rw,relatime - xfs /dev/loop5 rw\n";

TEST(CanarySafety, CanaryMountedWhereConfiguredIsFine) {
  EXPECT_EQ(mount_conflict(mounts(kBase), {blockdev("/dev/loop5", 7, 5)}, target("xfs", "/srv/canary"), true, false), "");
}

TEST(CanarySafety, DeviceAlsoMountedElsewhereIsRefused) {
  std::string t = std::string(kBase) + "41 22 7:5 / /mnt/other rw,relatime - xfs /dev/loop5 rw\n";
  auto why = mount_conflict(mounts(t), {blockdev("/dev/loop5", 7, 5)}, target("xfs", "/srv/canary"), true, false);
  EXPECT_NE(why.find("/mnt/other"), std::string::npos) << why;
}

TEST(CanarySafety, BindMountOfCanaryElsewhereIsRefused) {
  // btrfs: anonymous dev numbers; a second mount of the same filesystem shares them.
  std::string t =
      "22 1 252:0 / / rw - ext4 /dev/vda rw\n"
      "40 22 0:55 / /srv/canary rw - btrfs /dev/loop5 rw\n"
      "41 22 0:55 /sub /var/lib/app rw - btrfs /dev/loop6 rw\n";
  auto why = mount_conflict(mounts(t), {blockdev("/dev/loop5", 7, 5)}, target("btrfs", "/srv/canary"), true, false);
  EXPECT_NE(why.find("/var/lib/app"), std::string::npos) << why;
}

TEST(CanarySafety, ProductionFilesystemIsRefused) {
  // The configured mount point is just a directory on the root filesystem.
  const char* root_only = "22 1 252:0 / / rw,relatime - ext4 /dev/vda rw\n";
  auto why = mount_conflict(mounts(root_only), {blockdev("/dev/loop5", 7, 5)}, target("xfs", "/srv/notmounted"), true, false);
  EXPECT_NE(why.find("not mounted"), std::string::npos) << why;
  EXPECT_NE(why.find("/dev/vda"), std::string::npos) << why;
  // The mount point is a production filesystem on other devices.
  std::string t = std::string(root_only) + "42 22 8:1 / /data rw - xfs /dev/sda1 rw\n";
  why = mount_conflict(mounts(t), {blockdev("/dev/loop5", 7, 5)}, target("xfs", "/data"), true, false);
  EXPECT_NE(why.find("production"), std::string::npos) << why;
}

TEST(CanarySafety, OfflineMeansNoMemberMounted) {
  EXPECT_NE(mount_conflict(mounts(kBase), {blockdev("/dev/loop5", 7, 5)}, target("xfs", "/srv/canary"), false, false), "");
  EXPECT_EQ(mount_conflict(mounts("22 1 252:0 / / rw - ext4 /dev/vda rw\n"), {blockdev("/dev/loop5", 7, 5)},
                           target("xfs", "/srv/canary"), false, false),
            "");
}

TEST(CanarySafety, ZfsPoolMountIsRecognised) {
  std::string t = "22 1 252:0 / / rw - ext4 /dev/vda rw\n42 27 0:41 / /canexp rw,relatime - fuse.zfs canexp rw\n";
  auto tz = target("zfs", "/canexp");
  tz.pool = "canexp";
  // Which way a canary's mount is recognised is its operations' answer (ZFS: a dataset of its pool).
  testing::FakeRunner runner;
  ToolPaths tools;
  auto ops = make_canary_ops(tz, StackEnv{runner, tools, {}}, HostPaths{});
  ASSERT_TRUE(ops.ok()) << ops.error();
  ASSERT_TRUE((*ops)->mounted_as_pool());
  EXPECT_TRUE((*ops)->allows_file_members());
  EXPECT_EQ(mount_conflict(mounts(t), {}, tz, true, (*ops)->mounted_as_pool()), "");
  tz.pool = "otherpool";
  EXPECT_NE(mount_conflict(mounts(t), {}, tz, true, true), "");
  // Taken for a device mount, the same pool dataset is not the canary's: no member device is mounted there.
  tz.pool = "canexp";
  EXPECT_NE(mount_conflict(mounts(t), {}, tz, true, false), "");
  auto x = make_canary_ops(target("xfs", "/srv/canary"), StackEnv{runner, tools, {}}, HostPaths{});
  ASSERT_TRUE(x.ok());
  EXPECT_FALSE((*x)->mounted_as_pool());
  EXPECT_FALSE((*x)->allows_file_members());
}

TEST(CanaryIdentity, MismatchReasons) {
  DeviceIdentity a;
  a.path = "/dev/disk/by-id/wwn-0x5000";
  a.kind = DeviceKind::block;
  a.size = 1000;
  a.wwid = "naa.5000";
  auto b = a;
  EXPECT_TRUE(identity_mismatch(a, b).ok());
  b.wwid = "naa.6000";
  EXPECT_NE(identity_mismatch(a, b).error().find("WWN"), std::string::npos);
  b = a;
  b.size = 2000;
  EXPECT_NE(identity_mismatch(a, b).error().find("size"), std::string::npos);
  DeviceIdentity l;
  l.path = "/dev/loop3";
  l.kind = DeviceKind::loop;
  l.size = 5;
  l.backing_file = "/srv/a.img";
  auto l2 = l;
  l2.backing_file = "/srv/b.img";
  EXPECT_NE(identity_mismatch(l, l2).error().find("backed"), std::string::npos);
}

// Issue 29.1: a block size below the header wrote 24 bytes into a smaller buffer (a heap overflow in
// a root process, ASan confirmed); now only the block's own bytes are written, and no such size is valid.
TEST(CanaryPattern, BlockSizesBelowTheHeaderWriteNothingPastTheBlock) {
  PatternKey k{0x1234, 0xabcdef};
  for (std::size_t bs : {0u, 1u, 8u, 23u, 24u, 31u}) {
    std::vector<unsigned char> buf(bs + 16, 0xEE);
    make_block(k, 7, bs, buf.data());
    for (std::size_t i = bs; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xEE) << "block size " << bs << " wrote byte " << i;
    EXPECT_EQ(make_block(k, 7, bs).size(), bs);
    EXPECT_FALSE(valid_block_size(bs));
  }
  EXPECT_TRUE(valid_block_size(512));
  EXPECT_TRUE(valid_block_size(4096));
  EXPECT_FALSE(valid_block_size(4097));
  EXPECT_FALSE(valid_block_size(1u << 20));
}

// Issue 29.1: an identity with no field that stays with the device is refused (at init by
// common_checks, later by identity_mismatch), never matched on kind, size and path alone.
TEST(CanaryIdentity, AnIdentityWithoutAStableFieldIsRefused) {
  DeviceIdentity weak;
  weak.path = "/dev/vdb";
  weak.resolved = "/dev/vdb";
  weak.kind = DeviceKind::block;
  weak.size = 1000;
  EXPECT_NE(weak_identity(weak).error().find("no stable identity"), std::string::npos);
  EXPECT_NE(identity_mismatch(weak, weak).error().find("no stable identity"), std::string::npos);
  for (auto strong : {[] { DeviceIdentity d; d.serial = "S1"; return d; }(), [] { DeviceIdentity d; d.wwid = "naa.5"; return d; }(),
                      [] { DeviceIdentity d; d.by_id = {"/dev/disk/by-id/ata-X"}; return d; }(),
                      [] { DeviceIdentity d; d.kind = DeviceKind::loop; d.backing_file = "/srv/a.img"; return d; }(),
                      [] { DeviceIdentity d; d.kind = DeviceKind::file; d.inode = 42; return d; }()})
    EXPECT_TRUE(weak_identity(strong).ok());
  DeviceIdentity loop_no_file;
  loop_no_file.kind = DeviceKind::loop;
  EXPECT_EQ(weak_identity(loop_no_file).kind(), ErrorKind::refused);
}

TEST(CanaryIdentity, Signature) {
  auto t = signature_text("c1", "abc");
  EXPECT_TRUE(check_signature(t, "c1", "abc").ok());
  EXPECT_EQ(check_signature(t, "c2", "abc").kind(), ErrorKind::refused);
  EXPECT_EQ(check_signature(t, "c1", "abd").kind(), ErrorKind::refused);
  EXPECT_EQ(check_signature("hello", "c1", "abc").kind(), ErrorKind::refused);
}

// ---- raw writer and scanner on regular files
std::filesystem::path make_file(const TempDir& d, std::uint64_t size) {
  auto p = d / "dev.img";
  std::vector<char> z(size, 0x11);
  std::ofstream(p, std::ios::binary).write(z.data(), static_cast<std::streamsize>(z.size()));
  return p;
}

RawWriteGrant file_grant(const std::string& dev, std::uint64_t begin, std::uint64_t end) {
  auto id = identify_device(dev, HostPaths{});
  EXPECT_TRUE(id) << id.error();
  auto g = grant_for(*id, begin, end);
  EXPECT_TRUE(g) << g.error();
  return *g;
}

TEST(CanaryRawWriter, RefusesOutsideGrantAndWritesNothing) {
  TempDir d("canary-unit");
  auto p = make_file(d, 1 << 20);
  auto dev = std::filesystem::canonical(p).string();
  auto before = digest_file(p);
  std::vector<RawWriteGrant> g = {file_grant(dev, 8192, 12288)};
  std::vector<unsigned char> bytes(16, 0xEE);
  // Refused (the cycle's verdict goes by the kind): never any other failure.
  auto refused = [](const Result<RawWriteReceipt>& r) { return !r.ok() && r.kind() == ErrorKind::refused; };
  // outside the located block
  auto r1 = raw_write({dev, 4096, bytes, std::nullopt}, g);
  ASSERT_FALSE(r1);
  EXPECT_EQ(r1.error().rfind("refused: ", 0), 0u) << r1.error();
  EXPECT_TRUE(refused(r1));
  // straddling its end
  EXPECT_TRUE(refused(raw_write({dev, 12288 - 8, bytes, std::nullopt}, g)));
  // a device that is not granted
  auto other = d / "other.img";
  std::filesystem::copy_file(p, other);
  EXPECT_TRUE(refused(raw_write({other.string(), 8192, bytes, std::nullopt}, g)));
  // too many bytes
  EXPECT_TRUE(refused(raw_write({dev, 8192, std::vector<unsigned char>(600, 1), std::nullopt}, {file_grant(dev, 0, 1 << 20)})));
  // wrong expected-current bytes
  EXPECT_TRUE(refused(raw_write({dev, 8192, bytes, std::vector<unsigned char>(16, 0x22)}, g)));
  // relative path
  EXPECT_TRUE(refused(raw_write({"dev.img", 8192, bytes, std::nullopt}, g)));
  EXPECT_EQ(digest_file(p), before);
  EXPECT_EQ(digest_file(other), before);
}

TEST(CanaryRawWriter, ValidationAllowsTheGrantedRangeAndRefusesTheRest) {
  RawWriteGrant g;
  g.device = "/dev/x";
  g.begin = 8192;
  g.end = 12288;
  std::vector<unsigned char> bytes(16, 0xEE);
  EXPECT_TRUE(validate_raw_write({"/dev/x", 8192, bytes, std::nullopt}, "/dev/x", {g}).ok());
  auto outside = validate_raw_write({"/dev/x", 4096, bytes, std::nullopt}, "/dev/x", {g});
  EXPECT_EQ(outside.kind(), ErrorKind::refused);
  EXPECT_EQ(outside.error(), "offset 4096+16 lies outside the located canary block on /dev/x");
  auto other = validate_raw_write({"/dev/y", 8192, bytes, std::nullopt}, "/dev/y", {g});
  EXPECT_EQ(other.kind(), ErrorKind::refused);
  EXPECT_EQ(other.error(), "/dev/y is not a verified member of this canary");
}

TEST(CanaryRawWriter, WritesInsideGrantAndReportsOldBytes) {
  TempDir d("canary-unit");
  auto p = make_file(d, 1 << 20);
  auto dev = std::filesystem::canonical(p).string();
  std::vector<unsigned char> bytes = {1, 2, 3, 4, 5};
  auto r = raw_write({dev, 8200, bytes, std::vector<unsigned char>(5, 0x11)}, {file_grant(dev, 8192, 12288)});
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->before, std::vector<unsigned char>(5, 0x11));
  auto back = read_direct(dev, 8198, 9);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, (std::vector<unsigned char>{0x11, 0x11, 1, 2, 3, 4, 5, 0x11, 0x11}));
}

// Issue 29: a file vdev cannot be opened O_EXCL (no-op on files), so an offline canary's file with
// another process holding it open for writing is refused, naming that process; a reader is fine.
TEST(CanaryRawWriter, AFileVdevAnotherProcessWritesIsRefused) {
  TempDir d("canary-unit");
  auto p = make_file(d, 1 << 20);
  auto dev = std::filesystem::canonical(p).string();
  auto before = digest_file(p);
  testing::FileHolder reader({dev}, O_RDONLY, "canary-reader");
  testing::FileHolder writer({dev}, O_RDWR, "foreign-writer");
  ASSERT_TRUE(reader.ok() && writer.ok());
  struct stat st {};
  ASSERT_EQ(::stat(dev.c_str(), &st), 0);
  auto ws = writers_of(HostPaths{}, st.st_dev, st.st_ino, ::getpid());
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].pid, writer.pid());
  EXPECT_EQ(ws[0].comm, "foreign-writer");
  EXPECT_EQ(ws[0].uid, static_cast<long>(::getuid()));
  auto g = file_grant(dev, 8192, 12288);
  g.exclusive = true;  // offline, as the cycle injects and restores
  std::vector<unsigned char> bytes(16, 0xEE);
  auto r = raw_write({dev, 8192, bytes, std::nullopt}, {g});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("held open for writing by pid " + std::to_string(writer.pid()) + " (foreign-writer"), std::string::npos)
      << r.error();
  EXPECT_EQ(digest_file(p), before);
  writer.release();
  r = raw_write({dev, 8192, bytes, std::nullopt}, {g});
  EXPECT_TRUE(r) << "with only a reader left: " << r.error();
}

// The only writer an offline file vdev may have: root's zfs-fuse, which keeps the files of an exported
// pool open. A /proc fixture: zfs-fuse (uid 0) and an impostor named zfs-fuse (uid 1000) writing,
// a reader; only zfs-fuse is expected.
TEST(CanaryRawWriter, OnlyRootsZfsFuseMayHoldAnExportedFileVdev) {
  TempDir d("canary-unit");
  auto p = make_file(d, 4096);
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  auto proc = [&](const std::string& pid, const std::string& comm, int uid, const std::string& flags) {
    auto base = d / "proc" / pid;
    std::filesystem::create_directories(base / "fd");
    std::filesystem::create_directories(base / "fdinfo");
    std::filesystem::create_symlink(p, base / "fd" / "7");
    testing::write_text(base / "fdinfo" / "7", "pos:\t0\nflags:\t" + flags + "\nmnt_id:\t30\n");
    testing::write_text(base / "comm", comm + "\n");
    testing::write_text(base / "status", "Name:\t" + comm + "\nUid:\t" + std::to_string(uid) + "\t" + std::to_string(uid) + "\t0\t0\n");
  };
  proc("100", "zfs-fuse", 0, "0100002");
  proc("200", "zfs-fuse", 1000, "0100001");
  proc("300", "cat", 0, "0100000");
  HostPaths host;
  host.procfs = d / "proc";
  auto ws = writers_of(host, st.st_dev, st.st_ino, 1);
  ASSERT_EQ(ws.size(), 2u);
  std::sort(ws.begin(), ws.end(), [](const FileWriter& a, const FileWriter& b) { return a.pid < b.pid; });
  EXPECT_EQ(ws[0].pid, 100);
  EXPECT_EQ(ws[1].pid, 200);
  EXPECT_TRUE(expected_writer_of_exported_vdev(ws[0]));
  EXPECT_FALSE(expected_writer_of_exported_vdev(ws[1])) << "a process may call itself zfs-fuse";
  EXPECT_TRUE(writers_of(host, st.st_dev, st.st_ino + 1, 1).empty());
}

// The grant is a verified member, not a path: a file (or device) replaced at the same path, a grant
// without identity, or a block that is no longer the located one are all refused.
TEST(CanaryRawWriter, GrantIsTheVerifiedDeviceNotItsPath) {
  TempDir d("canary-unit");
  auto p = make_file(d, 1 << 20);
  auto dev = std::filesystem::canonical(p).string();
  auto g = file_grant(dev, 8192, 12288);
  std::vector<unsigned char> bytes(16, 0xEE);
  // Replaced at the same path (a re-plugged disk, a re-attached loop): another inode.
  std::filesystem::rename(p, d / "old.img");
  make_file(d, 1 << 20);
  auto before = digest_file(p);
  auto r = raw_write({dev, 8192, bytes, std::nullopt}, {g});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not the verified member"), std::string::npos) << r.error();
  EXPECT_EQ(digest_file(p), before);
  // A grant that names the path only.
  RawWriteGrant bare;
  bare.device = dev;
  bare.begin = 8192;
  bare.end = 12288;
  r = raw_write({dev, 8192, bytes, std::nullopt}, {bare});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("no inode"), std::string::npos) << r.error();
  // The whole located block is compared through the writing descriptor.
  auto g2 = file_grant(dev, 8192, 12288);
  g2.block = std::vector<unsigned char>(4096, 0x11);
  g2.block->at(4000) = 0x12;
  r = raw_write({dev, 8192, bytes, std::nullopt}, {g2});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not the located canary block"), std::string::npos) << r.error();
  EXPECT_EQ(digest_file(p), before);
  g2.block->at(4000) = 0x11;
  ASSERT_TRUE(raw_write({dev, 8192, bytes, std::nullopt}, {g2}));
  EXPECT_NE(digest_file(p), before);
}

TEST(CanaryScanner, FindsPlantedBlocksAtTheirOffsets) {
  TempDir d("canary-unit");
  const std::uint64_t size = 8 << 20;
  auto p = make_file(d, size);
  PatternKey k{42, 0x5eed};
  // Blocks at 512-aligned (not 4K-aligned) offsets, one across the 1 MiB chunk boundary.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> planted = {{3, 512 * 7}, {5, (1 << 20) - 1024}, {5, 5 << 20}};
  {
    std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
    for (auto [idx, off] : planted) {
      auto b = make_block(k, idx, 4096);
      f.seekp(static_cast<std::streamoff>(off));
      f.write(reinterpret_cast<const char*>(b.data()), 4096);
    }
    // A block of another cycle must not be reported.
    auto stale = make_block(PatternKey{42, 0x01d}, 5, 4096);
    f.seekp(6 << 20);
    f.write(reinterpret_cast<const char*>(stale.data()), 4096);
  }
  ScanOptions o;
  o.queue_depth = 8;
  auto r = scan_device(p.string(), k.nonce, o);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->bytes, size);
  ASSERT_EQ(r->hits.size(), 3u);
  std::set<std::pair<std::uint64_t, std::uint64_t>> got;
  for (auto h : r->hits) got.insert({h.index, h.offset});
  for (auto pl : planted) EXPECT_TRUE(got.count(pl)) << pl.first << "@" << pl.second;
  EXPECT_GT(r->bytes_per_second(), 0);
}

TEST(CanaryScanner, MissingDeviceIsAnError) {
  auto r = scan_device("/nonexistent/dev", 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("/nonexistent/dev"), std::string::npos);
}

// ---- refusal before any host change: not in config
TEST(CanaryCycle, NotInConfigIsRefused) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() + "\n");
  ProcessRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto r = run_cycle(cfg.canary, "ghost", env);
  EXPECT_EQ(r.verdict, Verdict::refused);
  EXPECT_NE(r.reason.find("not a canary in the config"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.expectation_met);
}

TEST(CanaryMetrics, FromState) {
  auto cfg = parse(kTwoCanaries);
  CanaryState s;
  s.runs["repaired"] = 3;
  s.runs["silent"] = 1;
  CycleReport r;
  r.verdict = Verdict::silent;
  r.expect = "repaired";
  r.expectation_met = false;
  r.finished = 1700000000;
  r.copies_found = 2;
  r.scan_bytes = 100;
  r.scan_seconds = 0.5;
  s.last = r;
  auto b = canary_metrics(cfg.canary.canaries[0], s);
  metrics::Labels l{{"target", "mirror"}, {"fs", "btrfs"}, {"layout", "raid1"}};
  auto with = [&](const std::string& k, const std::string& v) {
    auto x = l;
    x[k] = v;
    return x;
  };
  EXPECT_EQ(b.value("fsaudit_canary_runs_total", with("verdict", "repaired")), 3);
  EXPECT_EQ(b.value("fsaudit_canary_runs_total", with("verdict", "detected")), 0);
  EXPECT_EQ(b.value("fsaudit_canary_last_verdict", with("verdict", "silent")), 1);
  EXPECT_EQ(b.value("fsaudit_canary_last_verdict", with("verdict", "repaired")), 0);
  EXPECT_EQ(b.value("fsaudit_canary_expectation_met", l), 0);
  EXPECT_EQ(b.value("fsaudit_canary_expected_verdict_info", with("expected", "repaired")), 1);
  EXPECT_EQ(b.value("fsaudit_canary_copies_found", l), 2);
  EXPECT_EQ(b.value("fsaudit_canary_scan_bytes_per_second", l), 200);
  EXPECT_EQ(b.value("fsaudit_canary_last_run_timestamp_seconds", l), 1700000000);
}

// The identity series the alert rules use to exclude a canary's own errors: mount point and pool,
// member devices by kernel name (by-id symlinks followed under a fake /dev) and path, interval.
TEST(CanaryProbe, IdentityMetricsLinkCanaryToMountPoolAndDevices) {
  TempDir d("canary-ident");
  HostPaths host = HostPaths::under(d.path());
  std::filesystem::create_directories(d / "dev/disk/by-id");
  testing::write_text(d / "dev/sdb9", "");
  std::filesystem::create_symlink("../../sdb9", d / "dev/disk/by-id/ata-A-part9");
  testing::write_text(d / "dev/sdc9", "");
  std::filesystem::create_symlink("../../sdc9", d / "dev/disk/by-id/ata-B-part9");
  auto cfg = parse(kTwoCanaries);
  const auto& mirror = cfg.canary.canaries[0];
  const auto& tank = cfg.canary.canaries[1];
  ASSERT_EQ(mirror.name, "mirror");
  ASSERT_EQ(tank.name, "tank-canary");

  metrics::Batch b;
  canary_identity_metrics(b, mirror, host);
  canary_identity_metrics(b, tank, host);
  EXPECT_EQ(b.value("fsaudit_canary_info", {{"target", "mirror"}, {"fs", "btrfs"}, {"layout", "raid1"},
                                            {"mountpoint", "/srv/canary-btrfs"}, {"pool", ""}}),
            1);
  EXPECT_EQ(b.value("fsaudit_canary_info", {{"target", "tank-canary"}, {"mountpoint", "/canarypool"}, {"pool", "canarypool"}}),
            1);
  EXPECT_EQ(b.value("fsaudit_canary_device_info",
                    {{"target", "mirror"}, {"device", "sdb9"}, {"path", "/dev/disk/by-id/ata-A-part9"}}),
            1);
  EXPECT_EQ(b.value("fsaudit_canary_device_info",
                    {{"target", "mirror"}, {"device", "sdc9"}, {"path", "/dev/disk/by-id/ata-B-part9"}}),
            1);
  EXPECT_FALSE(b.has("fsaudit_canary_device_info", {{"target", "mirror"}, {"device", "ata-A-part9"}}));
  EXPECT_EQ(b.value("fsaudit_canary_interval_seconds", {{"target", "mirror"}}), 12 * 3600);
  EXPECT_EQ(b.value("fsaudit_canary_interval_seconds", {{"target", "tank-canary"}}),
            std::chrono::duration<double>(tank.interval).count());
  for (const auto& dev : tank.devices)
    EXPECT_TRUE(b.has("fsaudit_canary_device_info", {{"target", "tank-canary"}, {"path", dev}})) << dev;

  // Plain /dev names; a member that vanished (dangling link) still gets its kernel name.
  testing::write_text(d / "dev/loop3", "");
  EXPECT_EQ(block::kernel_name_or_target(host, "/dev/loop3"), "loop3");
  std::filesystem::create_symlink("../../sdz1", d / "dev/disk/by-id/gone-part1");
  EXPECT_EQ(block::kernel_name_or_target(host, "/dev/disk/by-id/gone-part1"), "sdz1");
  EXPECT_EQ(block::kernel_name_or_target(host, "/var/lib/fsaudit/lab/zfs-0.img"), "zfs-0.img");
}

TEST(CanaryProbe, OnePerCanaryWithItsSchedule) {
  auto cfg = parse(kTwoCanaries);
  auto probes = make_canary_probes(cfg);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0]->name(), "canary:mirror");
  EXPECT_EQ(probes[0]->scope(), Scope::host);
  auto s = canary_schedule(*probes[0]);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->interval, std::chrono::hours(12));
  EXPECT_FALSE(s->window.always);
}

TEST(CanaryProbe, NotDueRepublishesWithoutRunningACycle) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() +
                   "\ncanary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-nonexistent], mountpoint: /srv/nowhere, interval: 1h}]}\n");
  CanaryState s;
  s.runs["silent"] = 4;
  s.last_run = SystemClock::instance().wall_seconds() - 60;  // a minute ago: not due
  ASSERT_TRUE(save_state(cfg.state_dir, "c", s));
  ProcessRunner runner;
  ProbeContext ctx{cfg.host, runner, SystemClock::instance(), cfg.tools, cfg.state_dir, {}, SteadyTime::max()};
  auto probes = make_canary_probes(cfg);
  auto res = probes[0]->run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(res.metrics.value("fsaudit_canary_runs_total", {{"target", "c"}, {"verdict", "silent"}}), 4);
  EXPECT_EQ(load_state(cfg.state_dir, "c").cycles, 0u);  // no cycle ran
  // The identity series come from the config (the daemon publishes them), not from a run.
  EXPECT_FALSE(res.metrics.has("fsaudit_canary_info", {{"target", "c"}}));
  auto id = canary_identity_batch(cfg.canary, cfg.host);
  EXPECT_EQ(id.value("fsaudit_canary_info", {{"target", "c"}, {"mountpoint", "/srv/nowhere"}, {"pool", ""}}), 1);
  EXPECT_EQ(id.value("fsaudit_canary_device_info",
                     {{"target", "c"}, {"device", "null-nonexistent"}, {"path", "/dev/null-nonexistent"}}),
            1);
  EXPECT_EQ(id.value("fsaudit_canary_interval_seconds", {{"target", "c"}}), 3600);
}


// ---- one cycle per canary: the lock
TEST(CanaryLock, SecondHolderIsRefusedWithTheHolder) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() +
                   "\ncanary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-nonexistent], mountpoint: /srv/nowhere}]}\n");
  const auto& t = cfg.canary.canaries[0];
  auto a = CanaryLock::acquire(cfg.state_dir, t, cfg.host);
  ASSERT_TRUE(a) << a.error();
  auto b = CanaryLock::acquire(cfg.state_dir, t, cfg.host);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().find("busy"), std::string::npos) << b.error();
  EXPECT_NE(b.error().find("pid " + std::to_string(::getpid())), std::string::npos) << b.error();
  // A cycle started meanwhile is refused before it reads or touches anything, and says so.
  ProcessRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto r = run_cycle(cfg.canary, "c", env);
  EXPECT_EQ(r.verdict, Verdict::refused);
  EXPECT_TRUE(r.busy);
  EXPECT_NE(r.reason.find("busy"), std::string::npos) << r.reason;
  *a = CanaryLock{};  // released
  EXPECT_TRUE(CanaryLock::acquire(cfg.state_dir, t, cfg.host));
}

// A process that dies holding the lock releases it (no stale lock after a SIGKILL).
// A hard link planted at the lock's path: acquiring the lock truncated and rewrote the linked file
// (issue 29.6). It is refused, and the other file keeps every byte.
TEST(CanaryLock, PlantedHardLinkIsNotTruncated) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() +
                   "\ncanary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-nonexistent], mountpoint: /srv/nowhere}]}\n");
  const auto& t = cfg.canary.canaries[0];
  auto victim = d / "victim";
  const std::string content = "precious bytes that are not the canary's\n";
  { std::ofstream(victim) << content; }
  auto dir = canary_state_dir(cfg.state_dir, t.name);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::link(victim.c_str(), (dir / "lock").c_str()), 0) << std::strerror(errno);
  auto l = CanaryLock::acquire(cfg.state_dir, t, cfg.host);
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().find("single link"), std::string::npos) << l.error();
  std::ifstream in(victim);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, content);
}

TEST(CanaryLock, ReleasedWhenTheHolderIsKilled) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() +
                   "\ncanary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-nonexistent], mountpoint: /srv/nowhere}]}\n");
  const auto& t = cfg.canary.canaries[0];
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto l = CanaryLock::acquire(cfg.state_dir, t, cfg.host);
    char c = l ? 'y' : 'n';
    (void)!::write(p[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(p[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(CanaryLock::acquire(cfg.state_dir, t, cfg.host));
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_TRUE(CanaryLock::acquire(cfg.state_dir, t, cfg.host));
  ::close(p[0]);
  ::close(p[1]);
}

struct RecordingRunner final : CommandRunner {
  std::vector<std::vector<std::string>> calls;
  CommandResult run(const CommandSpec& spec, std::stop_token) override {
    calls.push_back(spec.argv);
    CommandResult r;
    r.exited = true;
    r.exit_code = 1;
    return r;
  }
};

// An unreadable marker may hide an injection: recovery touches nothing and keeps it.
TEST(CanaryRecovery, UnreadableMarkerIsKeptAndReported) {
  TempDir d("canary-unit");
  auto cfg = parse("state_dir: " + (d / "state").string() +
                   "\ncanary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-nonexistent], mountpoint: /srv/nowhere}]}\n");
  testing::write_text(inflight_path(cfg.state_dir, "c"), "{\"phase\": \"injected\", \"injection\": {");
  RecordingRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto r = run_cycle(cfg.canary, "c", env);
  EXPECT_EQ(r.verdict, Verdict::error);
  EXPECT_NE(r.recovery.find("unreadable"), std::string::npos) << r.recovery;
  EXPECT_TRUE(std::filesystem::exists(inflight_path(cfg.state_dir, "c")));
  EXPECT_TRUE(runner.calls.empty());
}

// ---- init refuses a filesystem with data, or a big one, unless forced
TEST(CanaryInit, BlockerOnDataOrSize) {
  TempDir d("canary-unit");
  std::filesystem::create_directories(d / "mnt/lost+found");
  testing::write_text(d / "mnt" / kSignatureFile, "x");
  constexpr auto no_cap = std::numeric_limits<std::uint64_t>::max();
  EXPECT_TRUE(init_blocker(d / "mnt", no_cap).ok());
  testing::write_text(d / "mnt/payroll.db", "data");
  auto blocked = init_blocker(d / "mnt", no_cap);
  EXPECT_EQ(blocked.kind(), ErrorKind::refused);
  EXPECT_NE(blocked.error().find("not empty"), std::string::npos) << blocked.error();
  EXPECT_NE(blocked.error().find("payroll.db"), std::string::npos) << blocked.error();
  std::filesystem::remove(d / "mnt/payroll.db");
  blocked = init_blocker(d / "mnt", 1 << 20);  // whatever holds /tmp is larger than 1 MiB
  EXPECT_NE(blocked.error().find("more than a canary needs"), std::string::npos) << blocked.error();
}

// ---- the lab touches only what it made
TEST(CanaryLabLeftovers, OnlyWhatTheLabCouldHaveMade) {
  std::filesystem::path dir = "/var/lib/fsaudit/lab";
  auto l = sanitize_leftovers(R"({"mounts": ["/var/lib/fsaudit/lab/mnt/xfs", "/home", "/var/lib/fsaudit/lab/mnt/../../../../home"],
    "pools": ["fsauditlab123", "tank", "fsauditlab12x"],
    "files": ["/var/lib/fsaudit/lab/xfs.img", "/etc/shadow", "/var/lib/fsaudit/lab/sub/x.img"],
    "loops": ["/dev/loop9"]})",
                              dir);
  EXPECT_EQ(l.mounts, (std::vector<std::string>{"/var/lib/fsaudit/lab/mnt/xfs"}));
  EXPECT_EQ(l.pools, (std::vector<std::string>{"fsauditlab123"}));
  EXPECT_EQ(l.files, (std::vector<std::string>{"/var/lib/fsaudit/lab/xfs.img"}));
  EXPECT_EQ(l.ignored.size(), 6u);
  EXPECT_TRUE(sanitize_leftovers("not json", dir).ignored.size() == 1);
}

TEST(CanaryLabLeftovers, LabDirMustBeOurOwnPrivateDirectory) {
  TempDir d("canary-unit");
  std::filesystem::create_directories(d / "lab");
  ::chmod((d / "lab").c_str(), 0755);
  EXPECT_TRUE(check_lab_dir(d / "lab").ok());
  ::chmod((d / "lab").c_str(), 0777);
  auto open = check_lab_dir(d / "lab");
  EXPECT_EQ(open.kind(), ErrorKind::refused);
  EXPECT_NE(open.error().find("writable"), std::string::npos);
  std::filesystem::create_directory_symlink(d / "lab", d / "link");
  auto link = check_lab_dir(d / "link");
  EXPECT_EQ(link.kind(), ErrorKind::refused);
  EXPECT_NE(link.error().find("symlink"), std::string::npos);
}

// ---- CLI arguments never crash it
TEST(CanaryCli, BadNumberIsAnErrorNotACrash) {
  std::vector<std::string> args = {"canary", "scan-bench", "/dev/null", "--queue-depth", "lots"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int rc = -1;
  EXPECT_NO_THROW(rc = canary_cli(static_cast<int>(argv.size()), argv.data()));
  EXPECT_EQ(rc, 2);
}

// `fsauditd canary ARGS...` in process: its exit code and what it printed on stderr.
std::pair<int, std::string> run_canary_cli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::stringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  int rc = canary_cli(static_cast<int>(argv.size()), argv.data());
  std::cerr.rdbuf(old);
  return {rc, err.str()};
}

// A root CLI run refuses a config others can write: it names the tools run as root.
TEST(CanaryCli, RootRefusesAConfigOthersCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "the check applies to root";
  TempDir d("canary-unit");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "canary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-none], mountpoint: /srv/c}]}\n");
  ::chmod(f.c_str(), 0666);
  auto [rc, err] = run_canary_cli({"canary", "run", "c", "--config", f.string()});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("untrusted config"), std::string::npos) << err;
}

// `fsauditd --once` never runs a canary cycle (the service and its lock own canaries); the
// identity series still come from the config.
TEST(CanaryOnce, OnceSkipsCanaries) {
  TempDir d("canary-once");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "state_dir: " + (d / "state").string() +
                             "\ntargets: {discover: false}\ncanary: {canaries: [{name: c, fs: xfs, devices: [/dev/null-none], mountpoint: /srv/c}]}\n");
  auto r = testing::run({testing::fsauditd_binary(), "--once", "--config", f.string()}, 150);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fsaudit_probe_success{"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_EQ(r.out.find("probe=\"canary:c\""), std::string::npos) << "a canary probe ran under --once";
  EXPECT_NE(r.out.find("fsaudit_canary_info{"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(d / "state" / "canary" / "c" / "lock"));
}

// ---- the command runner: a failed wait is not "exit 0"
TEST(CanaryRunner, FailedWaitIsNotASuccess) {
  // With SIGCHLD ignored the kernel reaps children itself, so waiting for one fails (ECHILD).
  auto old = ::signal(SIGCHLD, SIG_IGN);
  ProcessRunner runner;
  CommandSpec s;
  s.argv = {"false"};
  auto r = runner.run(s);
  ::signal(SIGCHLD, old);
  EXPECT_FALSE(r.ok()) << "exit " << r.exit_code;
  EXPECT_FALSE(r.exited && r.exit_code == 0);
}


// `btrfs scrub start -B` that outlives its scrub (btrfs-progs 6.2, seen asleep on a futex after every
// record was final). This runner's start waits until it is stopped, as a hung process does until the
// real runner kills its group; its `scrub status -d -R` prints `status`.
class HangingScrubStart final : public CommandRunner {
 public:
  explicit HangingScrubStart(std::string status) : status_(std::move(status)) {}
  CommandResult run(const CommandSpec& spec, std::stop_token stop) override {
    CommandResult r;
    if (spec.argv.size() > 2 && spec.argv[1] == "scrub" && spec.argv[2] == "start") {
      auto deadline = std::chrono::steady_clock::now() + spec.timeout;
      while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (stop.stop_requested()) {
        r.term_signal = SIGKILL;
        stopped = true;
      } else {
        r.timed_out = true;
      }
      return r;
    }
    if (spec.argv.size() > 2 && spec.argv[1] == "scrub" && spec.argv[2] == "status") return testing::FakeRunner::exited(0, status_);
    return testing::FakeRunner::not_found(spec.argv[0]);
  }
  std::atomic<bool> stopped{false};

 private:
  std::string status_;
};

// The captured raid1 records (one corrected error), started `ago` seconds before now (local time).
std::string raid1_records_started(int ago) {
  auto text = testing::fixture("btrfs/scrub-status-dR-raid1-corrected-1-progs-6.2.txt");
  std::time_t t = std::time(nullptr) - ago;
  char when[64];
  std::strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", std::localtime(&t));
  for (auto at = text.find("Mon Nov 30 00:05:39 2026"); at != std::string::npos; at = text.find("Mon Nov 30 00:05:39 2026"))
    text.replace(at, 24, when);
  return text;
}

ScrubOutcome canary_scrub(CommandRunner& runner, std::chrono::milliseconds timeout, double* seconds) {
  config::CanaryTarget t;
  t.name = "c";
  t.fs = "btrfs";
  t.layout = "raid1";
  t.mountpoint = "/srv/canary";
  ToolPaths tools;
  StackEnv env{runner, tools, {}, timeout, std::chrono::seconds(1)};
  auto t0 = std::chrono::steady_clock::now();
  auto ops = make_canary_ops(t, env, HostPaths{});
  if (!ops) {
    ScrubOutcome failed;
    failed.error = ops.error();
    return failed;
  }
  auto o = (*ops)->scrub();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

TEST(CanaryScrub, BtrfsStartThatOutlivesItsFinalRecordsIsStoppedAndTheRecordsAreTheResult) {
  HangingScrubStart runner(raid1_records_started(0));
  double secs = 0;
  auto o = canary_scrub(runner, std::chrono::minutes(2), &secs);
  EXPECT_TRUE(runner.stopped);
  EXPECT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.errors_found, 1u);
  EXPECT_EQ(o.errors_repaired, 1u);
  EXPECT_EQ(o.uncorrectable, 0u);
  EXPECT_NE(o.summary.find("was stopped"), std::string::npos) << o.summary;
  // First look after the grace (1 s here), final for the grace, then stopped: far from the 2 minutes.
  EXPECT_LT(secs, 30) << o.summary;
}

TEST(CanaryScrub, BtrfsRecordsOfAnEarlierScrubDoNotStopTheStart) {
  HangingScrubStart runner(raid1_records_started(3600));
  double secs = 0;
  auto o = canary_scrub(runner, std::chrono::seconds(5), &secs);
  EXPECT_FALSE(runner.stopped);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("timed out"), std::string::npos) << o.error;
}

TEST(CanaryScrub, BtrfsStoppedStartWithZeroBytesScrubbedIsAFailure) {
  auto text = raid1_records_started(0);
  for (const auto* k : {"data_bytes_scrubbed: 262144", "tree_bytes_scrubbed: 147456"})
    for (auto at = text.find(k); at != std::string::npos; at = text.find(k))
      text.replace(at, std::strlen(k), std::string(k).substr(0, std::string(k).find(':')) + ": 0");
  HangingScrubStart runner(text);
  double secs = 0;
  auto o = canary_scrub(runner, std::chrono::minutes(2), &secs);
  EXPECT_TRUE(runner.stopped);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("0 bytes scrubbed"), std::string::npos) << o.error;
}

// The identity series (what the alert rules use to exclude a canary's own errors) are in every
// scrape from the start: while the first cycle runs and after it timed out. Here the cycle hangs in
// `zpool import` (a tool that sleeps) while recovering a pending cycle, and times out after 10 s.
TEST(CanaryDaemon, IdentitySeriesHoldDuringAndAfterATimedOutCycle) {
  TempDir d("canary-ident-daemon");
  auto vdev = d / "v0.vdev";
  testing::write_text(vdev, std::string(1 << 20, '\0'));
  auto slow = d / "slow-zpool";
  testing::write_text(slow, "#!/bin/sh\nsleep 25\n");
  ::chmod(slow.c_str(), 0755);
  std::filesystem::create_directories(d / "mnt");
  int port = testing::free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ntargets: {discover: false}\ntools: {zpool: " + slow.string() +
                     "}\ncanary:\n  canaries:\n    - {name: slowpoke, fs: zfs, layout: mirror, pool: slowpool, devices: [" +
                     vdev.string() + "], mountpoint: " + (d / "mnt").string() + ", timeout: 10s}\n";
  auto cfg = parse(yaml);
  CanaryRecord rec;
  rec.name = "slowpoke";
  rec.signature_id = "00";
  auto id = identify_device(vdev.string(), cfg.host);
  ASSERT_TRUE(id) << id.error();
  rec.devices = {*id};
  ASSERT_TRUE(save_record(cfg.state_dir, rec));
  testing::write_text(inflight_path(cfg.state_dir, "slowpoke"), R"({"phase": "offline", "started": 1})");
  testing::DaemonProcess dp(d.path(), yaml, port);
  auto has_identity = [&](const std::string& t) {
    return testing::scrape_value(t, "fsaudit_canary_info", {{"target", "slowpoke"}, {"pool", "slowpool"}}) == 1 &&
           testing::scrape_value(t, "fsaudit_canary_device_info", {{"target", "slowpoke"}, {"path", vdev.string()}}) == 1;
  };
  auto text = dp.wait_for([](const std::string& t) { return t.find("fsaudit_build_info") != std::string::npos; }, 30);
  EXPECT_TRUE(has_identity(text)) << "while the first cycle runs:\n" << text;
  text = dp.wait_for([](const std::string& t) {
    return testing::scrape_value(t, "fsaudit_probe_timeouts_total", {{"probe", "canary:slowpoke"}}) >= 1;
  }, 40);
  ASSERT_GE(testing::scrape_value(text, "fsaudit_probe_timeouts_total", {{"probe", "canary:slowpoke"}}), 1) << dp.log();
  EXPECT_TRUE(has_identity(text)) << "after the cycle timed out:\n" << text;
  dp.signal(SIGKILL);
}


// ---- the privileged helper refuses every request that names anything not in its own config

TEST(CanaryHelper, RefusesEverythingNotInItsOwnConfig) {
  TempDir d("canary-helper");
  auto own = parse("state_dir: " + (d / "state").string() + "\n" + std::string(kTwoCanaries).substr(std::string(kTwoCanaries).find("canary:")));
  const std::vector<std::string> refused = {
      R"({"verb": "canary-run", "canary": "ghost"})",
      R"({"verb": "canary-run", "canary": "../mirror"})",
      R"({"verb": "canary-run", "canary": "Mirror"})",
      R"({"verb": "canary-run", "canary": "/dev/sda"})",
      R"({"verb": "canary-run", "canary": ""})",
      R"({"verb": "canary-status", "canary": "lab-xfs"})",
      R"({"verb": "canary-run", "canary": "mirror", "devices": ["/dev/sda"]})",
      R"({"verb": "canary-run", "canary": "mirror", "mountpoint": "/"})",
      R"({"verb": "canary-run", "canary": "mirror", "tools": {"btrfs": "/bin/sh"}})",
      R"({"verb": "scrub-start", "canary": "mirror"})",
      R"({"verb": "exec", "canary": "mirror"})",
      R"({"verb": "canary_run", "canary": "mirror"})",
      R"({"canary": "mirror"})",
      R"({"verb": "canary-run"})",
      R"({"verb": "canary-run", "canary": 7})",
      R"(["canary-run", "mirror"])",
      "canary-run mirror",
      "",
      R"({"verb": "canary-run", "canary": ")" + std::string(2000, 'a') + "\"}",
  };
  RecordingRunner runner;
  for (const auto& req : refused) {
    auto out = handle_helper_request(req, own, runner);
    auto j = nlohmann::json::parse(out);
    EXPECT_FALSE(j.value("ok", true)) << req << " -> " << out;
    EXPECT_FALSE(j.value("refused", "").empty()) << req;
  }
  EXPECT_TRUE(runner.calls.empty()) << "a refused request ran " << runner.calls.size() << " command(s)";
  EXPECT_FALSE(std::filesystem::exists(d / "state" / "canary" / "ghost"));
  // What the config has is accepted (status reads the state; nothing runs).
  auto ok = nlohmann::json::parse(handle_helper_request(R"({"verb": "canary-status", "canary": "mirror"})", own, runner));
  EXPECT_TRUE(ok.value("ok", false)) << ok.dump();
  EXPECT_TRUE(runner.calls.empty());
}

TEST(CanaryHelper, TrustsOnlyARootOwnedConfigNobodyElseCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to own the file";
  TempDir d("canary-helper");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "{}\n");
  ::chmod(f.c_str(), 0644);
  ::chmod(d.path().c_str(), 0755);
  EXPECT_TRUE(check_trusted_file(f).ok());
  ::chmod(f.c_str(), 0664);
  auto writable = check_trusted_file(f);
  EXPECT_EQ(writable.kind(), ErrorKind::refused);
  EXPECT_NE(writable.error().find("writable"), std::string::npos);
  ::chmod(f.c_str(), 0644);
  ASSERT_EQ(::chown(f.c_str(), 65534, 0), 0);
  auto foreign = check_trusted_file(f);
  EXPECT_EQ(foreign.kind(), ErrorKind::refused);
  EXPECT_NE(foreign.error().find("not root"), std::string::npos);
}

// A config root trusts (root's, 0644 in a 0755 directory) with one XFS canary NAME whose state is
// <dir>/state: what the root CLI and fsaudit-helper read.
std::filesystem::path root_canary_config(const TempDir& d, const std::string& name) {
  ::chmod(d.path().c_str(), 0755);
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "state_dir: " + (d / "state").string() + "\ncanary: {canaries: [{name: " + name +
                             ", fs: xfs, devices: [/dev/null-none], mountpoint: /srv/" + name + "}]}\n");
  ::chmod(f.c_str(), 0644);
  return f;
}

// The real binary on a socket: it answers over fd 0 and refuses a name its own config lacks, even
// when the caller's idea of the canary (devices, paths) comes along.
TEST(CanaryHelper, BinaryServesOneRequestOnItsSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "the helper trusts only a root-owned config";
  TempDir d("canary-helper");
  auto cfgf = root_canary_config(d, "only");
  auto ask = [&](const std::string& req) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(sv[1], 0);
      ::dup2(sv[1], 1);
      ::close(sv[0]);
      ::execl(FSAUDIT_HELPER_BINARY, "fsaudit-helper", "--config", cfgf.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(sv[1]);
    std::string line = req + "\n";
    (void)!::write(sv[0], line.data(), line.size());
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(sv[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(sv[0]);
    int st = 0;
    ::waitpid(pid, &st, 0);
    return out;
  };
  auto out = ask(R"({"verb": "canary-run", "canary": "elsewhere"})");
  EXPECT_NE(out.find("not a canary in the helper's config"), std::string::npos) << out;
  out = ask(R"({"verb": "canary-run", "canary": "only", "devices": ["/dev/sda"]})");
  EXPECT_NE(out.find("unknown key"), std::string::npos) << out;
  // A configured name gets to the cycle, whose safety gate then speaks (never initialised here).
  out = ask(R"({"verb": "canary-run", "canary": "only"})");
  EXPECT_NE(out.find("\"ok\":true"), std::string::npos) << out;
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
  ::chmod(cfgf.c_str(), 0666);
  out = ask(R"({"verb": "canary-status", "canary": "only"})");
  EXPECT_NE(out.find("does not trust its config"), std::string::npos) << out;
  // Root reads no state another user can write (a forged in-flight marker names what root writes
  // back): a state directory owned by another user is refused before any request is read.
  ::chmod(cfgf.c_str(), 0644);
  std::filesystem::create_directories(d / "state");
  ASSERT_EQ(::chown((d / "state").c_str(), 65534, 65534), 0);
  out = ask(R"({"verb": "canary-status", "canary": "only"})");
  EXPECT_NE(out.find("does not trust its state directory"), std::string::npos) << out;
}

TEST(CanaryCli, RootRefusesAStateDirOthersCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "the check applies to root";
  TempDir d("canary-unit");
  auto f = root_canary_config(d, "c");
  auto cli = run_canary_cli;
  // The daemon's user owns the state directory (as /var/lib/fsaudit under the unit): refused, for
  // every command, with the way out.
  std::filesystem::create_directories(d / "state" / "canary" / "c");
  ASSERT_EQ(::chown((d / "state").c_str(), 65534, 65534), 0);
  for (const char* cmd : {"run", "status", "init"}) {
    auto [rc, err] = cli({"canary", cmd, "c", "--config", f.string()});
    EXPECT_EQ(rc, 2) << cmd << ": " << err;
    EXPECT_NE(err.find("refusing state directory"), std::string::npos) << cmd << ": " << err;
    EXPECT_NE(err.find("--state-dir"), std::string::npos) << err;
  }
  // A directory below the state directory another user owns counts too, and so does a symlink to one.
  ASSERT_EQ(::chown((d / "state").c_str(), 0, 0), 0);
  std::filesystem::create_directories(d / "elsewhere");
  ASSERT_EQ(::chown((d / "elsewhere").c_str(), 65534, 65534), 0);
  std::filesystem::create_directory_symlink(d / "elsewhere", d / "linked");
  auto [rc, err] = cli({"canary", "status", "c", "--config", f.string(), "--state-dir", (d / "linked").string()});
  EXPECT_EQ(rc, 2) << err;
  EXPECT_NE(err.find("refusing state directory"), std::string::npos) << err;
  // Root's own directory is fine: the command gets past the check (and then says what it has).
  auto ok = cli({"canary", "status", "c", "--config", f.string()});
  EXPECT_EQ(ok.second.find("refusing state directory"), std::string::npos) << ok.second;
}

}  // namespace
}  // namespace fsaudit::canary

namespace fsaudit::canary {
namespace {

TEST(CanaryEnums, VerdictAndDeviceKindSpellingsRoundTrip) {
  std::vector<std::string> spelled;
  for (auto v : verdicts()) {
    spelled.emplace_back(to_string(v));
    EXPECT_EQ(verdict_from(to_string(v)), v) << to_string(v);
  }
  EXPECT_EQ(spelled, (std::vector<std::string>{"repaired", "detected", "silent", "unverified", "not_injectable",
                                                "refused", "error"}));
  EXPECT_FALSE(verdict_from("Repaired").has_value());
  EXPECT_FALSE(verdict_from("").has_value());
  for (auto k : {DeviceKind::block, DeviceKind::loop, DeviceKind::file}) EXPECT_EQ(device_kind(to_string(k)), k);
  EXPECT_EQ(to_string(DeviceKind::loop), "loop");
  EXPECT_EQ(device_kind("tape"), DeviceKind::unknown);
  EXPECT_EQ(to_string(DeviceKind::unknown), "");
}

}  // namespace
}  // namespace fsaudit::canary
