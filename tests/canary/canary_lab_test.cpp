// Lab tests for the canary (loop devices, real mkfs/mount, zfs-fuse): the verdict matrix, every
// refusal case with device digests unchanged, crash recovery, the lab class, and the real daemon.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/lab.hpp"
#include "probes/canary/pattern.hpp"
#include "probes/canary/probe.hpp"
#include "probes/canary/scanner.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::canary {
namespace {

namespace fs = std::filesystem;
using namespace fsaudit::testing;

constexpr std::uint64_t MiB = 1 << 20;

// One canary stack built from RAII guards; torn down in reverse order even when a test fails.
struct Stack {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>("canary-lab");
  std::vector<std::unique_ptr<LoopDevice>> loops;
  std::unique_ptr<Mount> mount;
  std::unique_ptr<ZfsPool> pool;
  std::vector<std::string> files;  // zfs file vdevs
  std::string name, fs_, layout, pool_name;
  fs::path mnt() const { return dir->path() / "mnt"; }
  fs::path state() const { return dir->path() / "state"; }
  std::vector<std::string> devices() const {
    if (!files.empty()) return files;
    std::vector<std::string> v;
    for (auto& l : loops) v.push_back(l->device());
    return v;
  }
  std::string yaml(const std::vector<std::string>& devs, const std::string& mountpoint, const std::string& extra = "") const {
    std::string d;
    for (auto& x : devs) d += (d.empty() ? "" : ", ") + x;
    return "state_dir: " + state().string() + "\ncanary:\n  canaries:\n    - name: " + name + "\n      fs: " + fs_ +
           "\n      layout: " + layout + "\n      devices: [" + d + "]\n      mountpoint: " + mountpoint +
           (pool_name.empty() ? "" : "\n      pool: " + pool_name) + "\n" + extra;
  }
  config::Config config() const { return config::parse_config(yaml(devices(), mnt().string()), "lab-test.yaml"); }
  std::vector<std::string> digests() const {
    std::vector<std::string> v;
    for (auto& l : loops) v.push_back(digest_file(l->backing()));
    for (auto& f : files) v.push_back(digest_file(f));
    return v;
  }
  ~Stack() {
    mount.reset();
    pool.reset();
    loops.clear();
  }
};

std::unique_ptr<Stack> make_stack(const std::string& kind) {
  auto s = std::make_unique<Stack>();
  s->name = "t-" + kind;
  auto add_loop = [&](const std::string& n, std::uint64_t size) {
    s->loops.push_back(std::make_unique<LoopDevice>(s->dir->path(), n, size));
    return s->loops.back()->ok();
  };
  if (kind == "btrfs-raid1") {
    if (!add_loop("a.img", 128 * MiB) || !add_loop("b.img", 128 * MiB)) return nullptr;
    must({"mkfs.btrfs", "-f", "-q", "-d", "raid1", "-m", "raid1", s->loops[0]->device(), s->loops[1]->device()});
    s->mount = std::make_unique<Mount>(s->loops[0]->device(), s->mnt(), "btrfs", "device=" + s->loops[1]->device());
    s->fs_ = "btrfs";
    s->layout = "raid1";
  } else if (kind == "btrfs-single") {
    if (!add_loop("a.img", 128 * MiB)) return nullptr;
    must({"mkfs.btrfs", "-f", "-q", "-d", "single", "-m", "dup", s->loops[0]->device()});
    s->mount = std::make_unique<Mount>(s->loops[0]->device(), s->mnt(), "btrfs");
    s->fs_ = "btrfs";
    s->layout = "single";
  } else if (kind == "xfs") {
    if (!add_loop("a.img", 320 * MiB)) return nullptr;
    must({"mkfs.xfs", "-f", "-q", s->loops[0]->device()});
    s->mount = std::make_unique<Mount>(s->loops[0]->device(), s->mnt(), "xfs");
    s->fs_ = "xfs";
    s->layout = "plain";
  } else if (kind == "ext4") {
    if (!add_loop("a.img", 64 * MiB)) return nullptr;
    must({"mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", s->loops[0]->device()});
    s->mount = std::make_unique<Mount>(s->loops[0]->device(), s->mnt(), "ext4");
    s->fs_ = "ext4";
    s->layout = "plain";
  } else if (kind == "zfs-mirror") {
    for (int i = 0; i < 2; ++i) {
      auto f = s->dir->path() / ("v" + std::to_string(i) + ".vdev");
      { std::ofstream o(f); }
      fs::resize_file(f, 96 * MiB);
      s->files.push_back(f.string());
    }
    s->pool_name = "fsauditct" + std::to_string(::getpid());
    fs::create_directories(s->mnt());
    s->pool = std::make_unique<ZfsPool>(s->pool_name, std::vector<std::string>{"-m", s->mnt().string(), "mirror", s->files[0], s->files[1]});
    if (!s->pool->ok()) {
      ADD_FAILURE() << "zpool create: " << s->pool->error();
      return nullptr;
    }
    for (int i = 0; i < 50 && !fs::exists(s->mnt() / "."); ++i) DaemonProcess::sleep_ms(100);
    s->fs_ = "zfs";
    s->layout = "mirror";
    return s;
  }
  if (!s->mount || !s->mount->ok()) {
    ADD_FAILURE() << "mount failed: " << (s->mount ? s->mount->error() : "");
    return nullptr;
  }
  return s;
}

// Digests once the freshly made filesystem has stopped writing on its own (btrfs finishes some
// work in the first seconds after mkfs+mount); then any later change is the cycle's doing.
std::vector<std::string> settled_digests(const Stack& s) {
  ::sync();
  auto d = s.digests();
  for (int i = 0; i < 15; ++i) {
    DaemonProcess::sleep_ms(1000);
    ::sync();
    auto again = s.digests();
    if (again == d) return d;
    d = again;
  }
  ADD_FAILURE() << "the test filesystem never settled";
  return d;
}

CycleReport cycle(const config::Config& cfg, const std::string& name, const std::string& crash_after = "") {
  ProcessRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  env.crash_after_phase = crash_after;
  auto r = run_cycle(cfg.canary, name, env);
  if (crash_after.empty()) record_cycle(cfg.state_dir, r);
  return r;
}

void expect_clean_after_cycle(const Stack& s, const config::Config& cfg) {
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, s.name))) << "in-flight marker left behind";
  EXPECT_FALSE(fs::exists(s.mnt() / kCanaryFile)) << "canary file left behind";
  EXPECT_TRUE(fs::exists(s.mnt() / kSignatureFile)) << "canary is not mounted back";
}

void expect_verdict_metrics(const config::Config& cfg, const std::string& name, const std::string& verdict) {
  auto st = load_state(cfg.state_dir, name);
  auto b = canary_metrics(*cfg.canary.find(name), st);
  EXPECT_EQ(b.value("fsaudit_canary_runs_total", {{"target", name}, {"verdict", verdict}}), 1);
  EXPECT_EQ(b.value("fsaudit_canary_last_verdict", {{"target", name}, {"verdict", verdict}}), 1);
  EXPECT_EQ(b.value("fsaudit_canary_expectation_met", {{"target", name}}), 1);
}

// ------------------------------------------------------------------ the matrix
TEST(CanaryMatrix, BtrfsRaid1IsRepairedAndRepairVerified) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-raid1");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr0;
  auto in = init_canary(cfg, s->name, pr0);
  ASSERT_TRUE(in) << in.error();
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, "repaired");
  EXPECT_EQ(r.copies_found, 2u);
  ASSERT_TRUE(r.injection);
  EXPECT_EQ(r.repair_verified, 1);
  EXPECT_TRUE(r.detected_by == "read" || r.detected_by == "scrub") << r.detected_by;
  if (r.detected_by == "scrub") {
    EXPECT_GE(r.scrub_found, 1u);
  }
  EXPECT_TRUE(r.expectation_met);
  EXPECT_GT(r.scan_bytes, 0u);
  EXPECT_GT(r.caused_errors_cleared, 0u);  // btrfs counted the error, and the cycle cleared it
  // The raw copy holds the original bytes again.
  auto now = read_direct(r.injection->device, r.injection->offset, from_hex(r.injection->before_hex)->size());
  ASSERT_TRUE(now);
  EXPECT_EQ(to_hex(*now), r.injection->before_hex);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "repaired");
  // Counters were cleared on the canary only.
  auto stats = run({"btrfs", "device", "stats", s->mnt().string()});
  EXPECT_EQ(stats.out.find("corruption_errs  1"), std::string::npos) << stats.out;
}

TEST(CanaryMatrix, BtrfsSingleDataIsDetected) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, "detected");
  EXPECT_EQ(r.read_result, "eio");
  EXPECT_EQ(r.copies_found, 1u);
  EXPECT_GE(r.time_to_detect_seconds, 0);
  EXPECT_TRUE(r.expectation_met);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "detected");
}

TEST(CanaryMatrix, XfsIsSilent) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("xfs");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, "silent");
  EXPECT_EQ(r.read_result, "mismatch");
  EXPECT_EQ(r.copies_found, 1u);
  EXPECT_FALSE(r.scrub_supported);
  EXPECT_EQ(r.expect, "blind");
  EXPECT_TRUE(r.expectation_met);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "silent");
}

TEST(CanaryMatrix, Ext4IsSilent) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("ext4");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, "silent");
  EXPECT_EQ(r.copies_found, 1u);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "silent");
}

TEST(CanaryMatrix, ZfsMirrorIsRepaired) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  auto s = make_stack("zfs-mirror");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  auto in = init_canary(cfg, s->name, pr);
  ASSERT_TRUE(in) << in.error();
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, "repaired");
  EXPECT_EQ(r.copies_found, 2u);
  EXPECT_EQ(r.repair_verified, 1);
  EXPECT_TRUE(r.expectation_met);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "repaired");
  auto st = run({"zpool", "status", s->pool_name});
  EXPECT_NE(st.out.find("ONLINE"), std::string::npos) << st.out;
}

// ------------------------------------------------------------------ refusals
void expect_refused(const config::Config& cfg, const std::string& name, const std::string& fragment) {
  auto r = cycle(cfg, name);
  EXPECT_EQ(r.verdict, "refused") << r.to_json();
  EXPECT_NE(r.reason.find(fragment), std::string::npos) << r.reason;
  EXPECT_FALSE(r.injection.has_value());
}

TEST(CanaryRefusal, NotInConfig) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto before = settled_digests(*s);
  // The record and signature exist, but the config no longer names the canary.
  auto other = config::parse_config("state_dir: " + s->state().string() + "\n", "x.yaml");
  expect_refused(other, s->name, "not a canary in the config");
  ::sync();
  EXPECT_EQ(s->digests(), before);
  EXPECT_FALSE(fs::exists(s->mnt() / kCanaryFile));
}

TEST(CanaryRefusal, NoSignature) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  auto before = settled_digests(*s);
  expect_refused(cfg, s->name, "never initialised");  // no init at all
  ::sync();
  EXPECT_EQ(s->digests(), before);
  // Initialised, then the signature vanishes (someone reformatted/replaced the filesystem).
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  fs::remove(s->mnt() / kSignatureFile);
  before = settled_digests(*s);
  expect_refused(cfg, s->name, "no fsaudit signature");
  ::sync();
  EXPECT_EQ(s->digests(), before);
}

TEST(CanaryRefusal, DeviceIdentityChanged) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  // The config names the device through a stable link, as /dev/disk/by-id would.
  auto link = s->dir->path() / "by-id-canary";
  fs::create_symlink(s->loops[0]->device(), link);
  auto cfg = config::parse_config(s->yaml({link.string()}, s->mnt().string()), "x.yaml");
  ProcessRunner pr;
  auto in = init_canary(cfg, s->name, pr);
  ASSERT_TRUE(in) << in.error();
  // Later the link points at another disk.
  LoopDevice other(s->dir->path(), "other.img", 128 * MiB);
  ASSERT_TRUE(other.ok());
  fs::remove(link);
  fs::create_symlink(other.device(), link);
  auto before = settled_digests(*s);
  auto other_before = digest_file(other.backing());
  expect_refused(cfg, s->name, "identity changed");
  ::sync();
  EXPECT_EQ(s->digests(), before);
  EXPECT_EQ(digest_file(other.backing()), other_before);
}

TEST(CanaryRefusal, DeviceMountedOutsideTheCanary) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  Mount elsewhere(s->loops[0]->device(), s->dir->path() / "elsewhere", "btrfs");
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.error();
  auto before = settled_digests(*s);
  expect_refused(cfg, s->name, "elsewhere");
  ::sync();
  EXPECT_EQ(s->digests(), before);
}

TEST(CanaryRefusal, PathIsAProductionFilesystem) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  // The config is edited to point the canary at a directory of the root filesystem, where even a
  // copy of the signature file sits: still refused, nothing written there or on the device.
  TempDir prod("canary-prod");
  write_text(prod / kSignatureFile, *read_file(s->mnt() / kSignatureFile));
  s->mount->unmount();  // the canary itself is not mounted: only the production path is left
  auto bad = config::parse_config(s->yaml(s->devices(), prod.path().string()), "x.yaml");
  auto before = settled_digests(*s);
  expect_refused(bad, s->name, "which is not the canary");
  ::sync();
  EXPECT_EQ(s->digests(), before);
  EXPECT_FALSE(fs::exists(prod / kCanaryFile));
  // init refuses it too.
  auto in = init_canary(bad, s->name, pr);
  ASSERT_FALSE(in);
  EXPECT_NE(in.error().find("refused"), std::string::npos) << in.error();
}

// ------------------------------------------------------------------ crash safety
TEST(CanaryCrash, PendingCycleIsFoundRestoredAndReported) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-raid1");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto crashed = cycle(cfg, s->name, "injected");  // "dies" right after corrupting one copy
  ASSERT_TRUE(crashed.injection) << crashed.to_json();
  ASSERT_TRUE(fs::exists(inflight_path(cfg.state_dir, s->name)));
  auto inj = *crashed.injection;
  auto cur = read_direct(inj.device, inj.offset, from_hex(inj.before_hex)->size());
  ASSERT_TRUE(cur);
  EXPECT_EQ(to_hex(*cur), inj.after_hex) << "the injection should be on disk";
  // Restart: the next cycle finds the marker, restores the bytes, cleans up, reports, then runs.
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_NE(r.recovery.find("pending cycle (phase injected)"), std::string::npos) << r.recovery;
  EXPECT_NE(r.recovery.find("brought the canary back online"), std::string::npos) << r.recovery;
  EXPECT_NE(r.recovery.find("restored"), std::string::npos) << r.recovery;
  EXPECT_EQ(r.verdict, "repaired");
  EXPECT_EQ(load_state(cfg.state_dir, s->name).recoveries, 1u);
  cur = read_direct(inj.device, inj.offset, from_hex(inj.before_hex)->size());
  ASSERT_TRUE(cur);
  EXPECT_EQ(to_hex(*cur), inj.before_hex);
  expect_clean_after_cycle(*s, cfg);
}

// ------------------------------------------------------------------ lab class
TEST(CanaryLab, BuildsSignsAddsAndTearsDown) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir d("canary-labclass");
  auto cfg = config::parse_config("state_dir: " + (d / "state").string() +
                                      "\ncanary: {lab: {enabled: true, stacks: [btrfs-single, ext4]}}\n",
                                  "lab.yaml");
  std::string loops_before = run({"losetup", "-a"}).out;
  std::vector<std::string> devices;
  {
    auto lab = Lab::setup(cfg);
    ASSERT_TRUE(lab) << lab.error();
    EXPECT_EQ((*lab)->canaries(), (std::vector<std::string>{"lab-btrfs-single", "lab-ext4"}));
    ASSERT_EQ(cfg.canary.canaries.size(), 2u);
    for (const auto& c : cfg.canary.canaries) devices.insert(devices.end(), c.devices.begin(), c.devices.end());
    // A reloaded config gets the lab canaries back.
    auto reloaded = config::parse_config("state_dir: " + (d / "state").string() + "\n", "reload.yaml");
    (*lab)->add_to(reloaded);
    EXPECT_EQ(reloaded.canary.canaries.size(), 2u);
    auto r = cycle(cfg, "lab-ext4");
    EXPECT_EQ(r.verdict, "silent") << r.to_json();
    auto r2 = cycle(cfg, "lab-btrfs-single");
    EXPECT_EQ(r2.verdict, "detected") << r2.to_json();
  }
  std::string loops_after = run({"losetup", "-a"}).out;
  for (const auto& dev : devices) EXPECT_EQ(loops_after.find(dev + ":"), std::string::npos) << dev << " still attached";
  auto mi = *read_file("/proc/self/mountinfo");
  EXPECT_EQ(mi.find((d / "state" / "lab").string()), std::string::npos) << "lab mount left behind";
}

// ------------------------------------------------------------------ the real daemon
TEST(CanaryDaemon, VerdictAndMetricInARealScrapeAndCrashRecovery) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto raid = make_stack("btrfs-raid1");
  ASSERT_TRUE(raid);
  auto xfs = make_stack("xfs");
  ASSERT_TRUE(xfs);
  TempDir d("canary-daemon");
  int port = free_port();
  auto entry = [](const Stack& s) {
    std::string devs;
    for (auto& x : s.devices()) devs += (devs.empty() ? "" : ", ") + x;
    return "    - {name: " + s.name + ", fs: " + s.fs_ + ", layout: " + s.layout + ", devices: [" + devs +
           "], mountpoint: " + s.mnt().string() + ", interval: 1h}\n";
  };
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ntargets: {discover: false}\ncanary:\n  canaries:\n" + entry(*raid) + entry(*xfs);
  auto cfg = config::parse_config(yaml, "daemon.yaml");
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, raid->name, pr));
  ASSERT_TRUE(init_canary(cfg, xfs->name, pr));
  std::string first_log;
  {
    // First run: the daemon is killed between injection and repair.
    DaemonProcess dp(d.path(), yaml, port, {}, {{"FSAUDIT_CANARY_CRASH_AFTER", "injected"}});
    for (int i = 0; i < 600 && dp.running(); ++i) DaemonProcess::sleep_ms(100);
    ASSERT_FALSE(dp.running()) << dp.log();
    first_log = dp.log();
  }
  bool raid_pending = fs::exists(inflight_path(cfg.state_dir, raid->name));
  bool xfs_pending = fs::exists(inflight_path(cfg.state_dir, xfs->name));
  ASSERT_TRUE(raid_pending || xfs_pending) << "the killed daemon left no in-flight marker; its log:\n" << first_log;
  DaemonProcess dp(d.path(), yaml, port);
  auto text = dp.wait_for(
      [&](const std::string& t) {
        return scrape_value(t, "fsaudit_canary_last_verdict", {{"target", raid->name}, {"verdict", "repaired"}}) == 1 &&
               scrape_value(t, "fsaudit_canary_last_verdict", {{"target", xfs->name}, {"verdict", "silent"}}) == 1;
      },
      240);
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_last_verdict", {{"target", raid->name}, {"verdict", "repaired"}}), 1)
      << scrape_lines(text, "fsaudit_canary_last_verdict") << dp.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_last_verdict", {{"target", xfs->name}, {"verdict", "silent"}}), 1)
      << scrape_lines(text, "fsaudit_canary_last_verdict");
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_runs_total", {{"target", raid->name}, {"verdict", "repaired"}}), 1);
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_expectation_met", {{"target", raid->name}}), 1);
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_copies_found", {{"target", raid->name}}), 2);
  EXPECT_GT(scrape_value(text, "fsaudit_canary_scan_bytes_per_second", {{"target", xfs->name}}), 0);
  double recovered = scrape_value(text, "fsaudit_canary_recovered_cycles_total", {{"target", raid->name}}) +
                     scrape_value(text, "fsaudit_canary_recovered_cycles_total", {{"target", xfs->name}});
  EXPECT_GE(recovered, 1) << scrape_lines(text, "fsaudit_canary_recovered_cycles_total");
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, raid->name)));
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, xfs->name)));
  dp.stop();
}

}  // namespace
}  // namespace fsaudit::canary

namespace fsaudit::canary {
namespace {

// Lab mode end to end: the daemon builds the lab, runs every canary, exports every verdict, and
// tears everything down at SIGTERM.
TEST(CanaryDaemon, LabModeShowsEveryVerdict) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  bool zfs = !zfs_fuse_unavailable().has_value();
  std::unique_ptr<ZfsFuse> zf;  // outlives the daemon: the lab's pool goes before zfs-fuse
  if (zfs) {
    zf = std::make_unique<ZfsFuse>();
    ASSERT_TRUE(zf->ok()) << zf->error();
  }
  TempDir d("canary-labd");
  int port = free_port();
  std::string stacks = zfs ? "[btrfs-raid1, btrfs-single, xfs, ext4, zfs-mirror]" : "[btrfs-raid1, btrfs-single, xfs, ext4]";
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ntargets: {discover: false}\ncanary:\n  lab: {enabled: true, interval: 1h, stacks: " + stacks + "}\n";
  std::map<std::string, std::string> want = {{"lab-btrfs-raid1", "repaired"},
                                             {"lab-btrfs-single", "detected"},
                                             {"lab-xfs", "silent"},
                                             {"lab-ext4", "silent"}};
  if (zfs) want["lab-zfs-mirror"] = "repaired";
  {
    DaemonProcess dp(d.path(), yaml, port, {}, {{"FSAUDIT_LAB_ZFS_LOCK_HELD", zfs ? "1" : "0"}});
    auto all = [&](const std::string& t) {
      for (const auto& [name, verdict] : want)
        if (scrape_value(t, "fsaudit_canary_last_verdict", {{"target", name}, {"verdict", verdict}}) != 1) return false;
      return true;
    };
    auto text = dp.wait_for(all, 300);
    for (const auto& [name, verdict] : want) {
      EXPECT_EQ(scrape_value(text, "fsaudit_canary_last_verdict", {{"target", name}, {"verdict", verdict}}), 1)
          << name << "\n" << scrape_lines(text, "fsaudit_canary_last_verdict");
      EXPECT_EQ(scrape_value(text, "fsaudit_canary_expectation_met", {{"target", name}}), 1) << name;
    }
    EXPECT_EQ(dp.stop(60), 0) << dp.log();
  }
  auto loops = run({"losetup", "-a"}).out;
  EXPECT_EQ(loops.find((d / "state" / "lab").string()), std::string::npos) << loops;
  auto mi = *read_file("/proc/self/mountinfo");
  EXPECT_EQ(mi.find((d / "state" / "lab").string()), std::string::npos) << "lab mount left behind";
}

}  // namespace
}  // namespace fsaudit::canary
