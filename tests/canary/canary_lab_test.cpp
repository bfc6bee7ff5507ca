// Lab tests for the canary (loop devices, real mkfs/mount, zfs-fuse): the verdict matrix, every
// refusal case with device digests unchanged, crash recovery, the lab class, and the real daemon.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/lab.hpp"
#include "probes/canary/lock.hpp"
#include "probes/canary/marker.hpp"
#include "probes/canary/pattern.hpp"
#include "probes/canary/probe.hpp"
#include "probes/canary/scanner.hpp"
#include "probes/canary/stack.hpp"
#include "daemon/core/helper_client.hpp"
#include "tests/canary/helper_socket.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/private_bus.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::canary {
namespace {

namespace fs = std::filesystem;
using namespace fsaudit::testing;

constexpr std::uint64_t MiB = 1 << 20;

// One canary stack built by the lab's own recipe (Lab::build, the stacks of config::canary_lab_stacks());
// the lab tears it down (unmount, zpool destroy, losetup -d) even when a test fails.
struct Stack {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>("canary-lab");
  std::unique_ptr<Lab> lab;  // goes before dir
  config::CanaryTarget built;
  std::string name, fs_, layout, pool_name;
  fs::path mnt() const { return built.mountpoint; }
  fs::path state() const { return dir->path() / "state"; }
  std::vector<std::string> devices() const { return built.devices; }
  std::string yaml(const std::vector<std::string>& devs, const std::string& mountpoint, const std::string& extra = "") const {
    std::string d;
    for (auto& x : devs) d += (d.empty() ? "" : ", ") + x;
    return "state_dir: " + state().string() + "\ncanary:\n  canaries:\n    - name: " + name + "\n      fs: " + fs_ +
           "\n      layout: " + layout + "\n      devices: [" + d + "]\n      mountpoint: " + mountpoint +
           (pool_name.empty() ? "" : "\n      pool: " + pool_name) + "\n" + extra;
  }
  config::Config config() const { return config::parse_config(yaml(devices(), mnt().string()), "lab-test.yaml"); }
  // Of the loop devices' backing files and the ZFS file vdevs.
  std::vector<std::string> digests() const {
    std::vector<std::string> v;
    for (auto& f : lab->images()) v.push_back(digest_file(f));
    return v;
  }
  void unmount() const { must({"umount", built.mountpoint}); }
};

std::unique_ptr<Stack> make_stack(const std::string& kind) {
  auto s = std::make_unique<Stack>();
  s->name = "t-" + kind;
  auto cfg = config::parse_config("state_dir: " + s->state().string() + "\ncanary: {lab: {dir: " +
                                      (s->dir->path() / "lab").string() + ", stacks: [" + kind + "]}}\n",
                                  "lab-stack.yaml");
  auto lab = Lab::build(cfg);
  if (!lab) {
    ADD_FAILURE() << lab.error();
    return nullptr;
  }
  s->lab = std::move(*lab);
  s->built = s->lab->targets().at(0);
  s->fs_ = s->built.fs;
  s->layout = s->built.layout;
  s->pool_name = s->built.pool;
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

CycleReport cycle(const config::Config& cfg, const std::string& name) {
  ProcessRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto r = run_cycle(cfg.canary, name, env);
  record_cycle(cfg.state_dir, r);
  return r;
}

// Runs a cycle in a forked child that SIGKILLs itself when the cycle reaches `at` (after `before_kill`,
// if given, ran in the child). True when the child died that way.
bool cycle_killed_at(const config::Config& cfg, const std::string& name, const std::string& at,
                     const std::function<void(const std::string&)>& each_phase = {},
                     const std::function<void()>& before_kill = {}) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ProcessRunner runner;
    CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
    env.on_phase = [&](const std::string& p) {
      if (each_phase) each_phase(p);
      if (p != at) return;
      if (before_kill) before_kill();
      ::raise(SIGKILL);
    };
    auto r = run_cycle(cfg.canary, name, env);
    write_text(cfg.state_dir / "child-report.json", r.to_json());  // why it was not killed
    ::_exit(0);
  }
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return false;
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

// Recovery alone, as a restarted daemon does it first (under the canary's lock).
std::string recover(const config::Config& cfg, const std::string& name) {
  ProcessRunner runner;
  CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto lock = CanaryLock::acquire(cfg.state_dir, *cfg.canary.find(name), cfg.host);
  if (!lock) return "lock: " + lock.error();
  return recover_pending(cfg.canary, name, env);
}

// 4 KiB-block fingerprints of a device read with O_DIRECT (what is on disk, not in a cache).
std::vector<std::size_t> block_hashes(const std::string& dev) {
  std::vector<std::size_t> out;
  auto size = device_size(dev);
  if (!size) return out;
  for (std::uint64_t off = 0; off < *size; off += MiB) {
    auto chunk = read_direct(dev, off, static_cast<std::size_t>(std::min<std::uint64_t>(MiB, *size - off)));
    if (!chunk) return {};
    for (std::size_t i = 0; i < chunk->size(); i += 4096)
      out.push_back(std::hash<std::string_view>{}(
          std::string_view(reinterpret_cast<const char*>(chunk->data() + i), std::min<std::size_t>(4096, chunk->size() - i))));
  }
  return out;
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
  EXPECT_EQ(r.verdict, Verdict::repaired);
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
  EXPECT_EQ(r.verdict, Verdict::detected);
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
  EXPECT_EQ(r.verdict, Verdict::silent);
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
  EXPECT_EQ(r.verdict, Verdict::silent);
  EXPECT_EQ(r.copies_found, 1u);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "silent");
}

// A zfs-fuse mirror on two file vdevs, initialised as a canary (its config in `cfg`); nullptr after a failure.
std::unique_ptr<Stack> initialised_zfs_mirror(config::Config& cfg) {
  auto s = make_stack("zfs-mirror");
  if (!s) return nullptr;
  cfg = s->config();
  ProcessRunner pr;
  auto in = init_canary(cfg, s->name, pr);
  if (!in) {
    ADD_FAILURE() << "canary init: " << in.error();
    return nullptr;
  }
  return s;
}

TEST(CanaryMatrix, ZfsMirrorIsRepaired) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  config::Config cfg;
  auto s = initialised_zfs_mirror(cfg);
  ASSERT_TRUE(s);
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, Verdict::repaired);
  EXPECT_EQ(r.copies_found, 2u);
  EXPECT_EQ(r.repair_verified, 1);
  EXPECT_TRUE(r.expectation_met);
  expect_clean_after_cycle(*s, cfg);
  expect_verdict_metrics(cfg, s->name, "repaired");
  auto st = run({"zpool", "status", s->pool_name});
  EXPECT_NE(st.out.find("ONLINE"), std::string::npos) << st.out;
}

// Issue 29: a file vdev cannot be opened O_EXCL (a no-op on regular files). With the pool exported,
// a process that holds a vdev file open for writing makes the injection refuse, naming it; zfs-fuse's
// own descriptors (it keeps an exported pool's files open) do not, so the next cycle runs.
TEST(CanaryMatrix, ZfsFileVdevWithAForeignWriterIsRefusedThenTheCycleRuns) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  config::Config cfg;
  auto s = initialised_zfs_mirror(cfg);
  ASSERT_TRUE(s);
  FileHolder writer(s->devices(), O_RDWR, "foreign-writer");  // the zfs stack's members are its vdev files
  ASSERT_TRUE(writer.ok());
  auto r = cycle(cfg, s->name);
  EXPECT_EQ(r.verdict, Verdict::refused) << r.to_json();
  EXPECT_NE(r.reason.find("held open for writing by pid " + std::to_string(writer.pid()) + " (foreign-writer"), std::string::npos)
      << r.to_json();
  EXPECT_FALSE(r.injection) << r.to_json();
  expect_clean_after_cycle(*s, cfg);
  writer.release();
  r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_EQ(r.verdict, Verdict::repaired);
  EXPECT_EQ(r.repair_verified, 1);
  expect_clean_after_cycle(*s, cfg);
}

// ------------------------------------------------------------------ refusals
void expect_refused(const config::Config& cfg, const std::string& name, const std::string& fragment) {
  auto r = cycle(cfg, name);
  EXPECT_EQ(r.verdict, Verdict::refused) << r.to_json();
  EXPECT_NE(r.reason.find(fragment), std::string::npos) << r.reason;
  EXPECT_FALSE(r.injection.has_value());
}

// The canary's scrub when `btrfs scrub start -B` hangs after a real scrub (as btrfs-progs 6.2 was
// seen to, asleep on a futex for 25 minutes): a wrapper runs the real command, then sleeps in its
// place. The canary reads btrfs's real final records, stops the command (its whole process group)
// after the grace, and takes the records as the result.
TEST(CanaryScrubLab, BtrfsStartThatHangsAfterARealScrubIsStoppedAndItsRecordsCount) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-raid1");
  ASSERT_TRUE(s);
  write_text(s->mnt() / "data", std::string(4 << 20, 'x'));
  ::sync();
  auto wrapper = s->dir->path() / "btrfs-then-hang";
  auto pid_file = s->dir->path() / "hung.pid";
  write_text(wrapper, "#!/bin/sh\nbtrfs \"$@\"; rc=$?\nif [ \"$1 $2\" = \"scrub start\" ]; then echo $$ > '" +
                          pid_file.string() + "'; exec sleep 600; fi\nexit $rc\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  auto cfg = s->config();
  ProcessRunner runner;
  ToolPaths tools{{"btrfs", wrapper.string()}};
  StackEnv env{runner, tools, {}, std::chrono::minutes(5), std::chrono::seconds(2)};
  auto t0 = std::chrono::steady_clock::now();
  auto ops = make_canary_ops(*cfg.canary.find(s->name), env, cfg.host);
  ASSERT_TRUE(ops.ok()) << ops.error();
  auto o = (*ops)->scrub();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(o.ok) << o.error;
  EXPECT_NE(o.summary.find("was stopped"), std::string::npos) << o.summary;
  EXPECT_EQ(o.errors_found, 0u) << o.summary;
  EXPECT_LT(secs, 60) << o.summary;
  // The hung command is gone: the runner killed its process group.
  std::ifstream in(pid_file);
  pid_t hung = 0;
  ASSERT_TRUE(in >> hung) << "the wrapper never reached its hang";
  EXPECT_NE(::kill(hung, 0), 0) << "pid " << hung << " still runs";
}

// The canary's ZFS scrub goes through the ZFS scrub driver's start and its reading of the scan
// line, on a real zfs-fuse mirror: a second scrub right after a first one waits for its own (not the
// first one's "scrub repaired" line), and one after bytes of one side were overwritten on the vdev
// file finishes and counts what it found and repaired.
TEST(CanaryScrubLab, ZfsScrubWaitsForItsOwnScrubAndCountsWhatItRepairs) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  auto s = make_stack("zfs-mirror");
  ASSERT_TRUE(s);
  // 1 MiB of a text no metadata contains, to find on the vdev files (zfs-fuse compresses nothing by default).
  std::string block;
  while (block.size() < (1u << 20)) block += "fsaudit-zfs-scrub-lab-" + std::to_string(block.size()) + "\n";
  write_text(s->mnt() / "data", block);
  ::sync();
  auto cfg = s->config();
  ProcessRunner runner;
  auto ops = make_canary_ops(*cfg.canary.find(s->name), StackEnv{runner, cfg.tools, {}, std::chrono::minutes(5)}, cfg.host);
  ASSERT_TRUE(ops.ok()) << ops.error();
  auto first = (*ops)->scrub();
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.errors_found, 0u) << first.summary;
  auto second = (*ops)->scrub();
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_EQ(second.errors_found, 0u) << second.summary;
  EXPECT_NE(second.summary.find("scrub"), std::string::npos) << second.summary;
  // Overwrite 64 KiB of the file's data on one side of the mirror, behind the pool's back.
  ASSERT_FALSE(s->devices().empty());
  auto vdev = s->devices().front();
  std::ifstream in(vdev, std::ios::binary);
  std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(image.empty()) << vdev;
  auto at = image.find("fsaudit-zfs-scrub-lab-0\n");
  ASSERT_NE(at, std::string::npos) << "the data is not on " << vdev;
  {
    int fd = ::open(vdev.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::string junk(64 << 10, 'Z');
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(at)), static_cast<ssize_t>(junk.size()));
    ::fsync(fd);
    ::close(fd);
  }
  auto third = (*ops)->scrub();
  ASSERT_TRUE(third.ok) << third.error;
  EXPECT_GE(third.errors_found, 1u) << third.summary;
  EXPECT_GE(third.errors_repaired, 1u) << third.summary;
  EXPECT_EQ(third.uncorrectable, 0u) << third.summary;
  EXPECT_TRUE((*ops)->clear_counters().ok());
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
  fs::create_symlink(s->devices()[0], link);
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
  Mount elsewhere(s->devices()[0], s->dir->path() / "elsewhere", "btrfs");
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
  s->unmount();  // the canary itself is not mounted: only the production path is left
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
  ASSERT_TRUE(cycle_killed_at(cfg, s->name, "injected"));  // dies right after corrupting one copy
  ASSERT_TRUE(fs::exists(inflight_path(cfg.state_dir, s->name)));
  auto mk = nlohmann::json::parse(*read_file(inflight_path(cfg.state_dir, s->name)));
  ASSERT_TRUE(mk.contains("injection")) << mk.dump();
  EXPECT_GT(mk.value("pid", 0L), 0);
  EXPECT_FALSE(mk.value("boot_id", "").empty());
  std::string dev = mk["injection"]["device"], before = mk["injection"]["before"], after = mk["injection"]["after"];
  std::uint64_t off = mk["injection"]["offset"];
  auto cur = read_direct(dev, off, before.size() / 2);
  ASSERT_TRUE(cur);
  EXPECT_EQ(to_hex(*cur), after) << "the injection should be on disk";
  // Restart: the next cycle finds the marker, restores the bytes, cleans up, reports, then runs.
  auto r = cycle(cfg, s->name);
  SCOPED_TRACE(r.to_json());
  EXPECT_NE(r.recovery.find("pending cycle (phase injected, pid"), std::string::npos) << r.recovery;
  EXPECT_NE(r.recovery.find("brought the canary back online"), std::string::npos) << r.recovery;
  EXPECT_NE(r.recovery.find("restored"), std::string::npos) << r.recovery;
  EXPECT_EQ(r.verdict, Verdict::repaired);
  EXPECT_EQ(load_state(cfg.state_dir, s->name).recoveries, 1u);
  cur = read_direct(dev, off, before.size() / 2);
  ASSERT_TRUE(cur);
  EXPECT_EQ(to_hex(*cur), before);
  expect_clean_after_cycle(*s, cfg);
}

// SIGKILL at every phase of a cycle, then recovery as at a restart: recovered, the injected bytes
// are the original ones again, the injection changed nothing on the members but the target block,
// and a bystander device beside the canary is bit-identical.
TEST(CanaryCrash, KilledAtEveryPhaseIsRecovered) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-raid1");
  ASSERT_TRUE(s);
  LoopDevice bystander(s->dir->path(), "bystander.img", 16 * MiB);
  ASSERT_TRUE(bystander.ok());
  must({"dd", "if=/dev/urandom", "of=" + bystander.device(), "bs=1M", "count=16", "oflag=direct", "status=none"});
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto bystander_before = digest_file(bystander.backing());
  fs::path diff_file = s->dir->path() / "diff.txt";
  for (std::string at : {"marked", "written", "offline", "injected", "online+scrub", "scrubbing", "cleaning", "restoring"}) {
    SCOPED_TRACE("killed at " + at);
    fs::remove(diff_file);
    std::map<std::string, std::vector<std::size_t>> offline_hashes;
    auto record_diff = [&](const std::string& p) {
      if (p == "offline")
        for (const auto& d : s->devices()) offline_hashes[d] = block_hashes(d);
      if (p != "injected") return;
      std::string out;
      for (const auto& d : s->devices()) {
        auto now = block_hashes(d);
        auto canon = fs::canonical(d).string();
        for (std::size_t i = 0; i < now.size() && i < offline_hashes[d].size(); ++i)
          if (now[i] != offline_hashes[d][i]) out += canon + "@" + std::to_string(i * 4096) + "\n";
      }
      write_text(diff_file, out);
    };
    bool killed = false;
    if (at == "online+scrub") {
      // Dies with a scrub of the corrupted canary running.
      killed = cycle_killed_at(cfg, s->name, "online", record_diff,
                               [&] { (void)run({"btrfs", "scrub", "start", s->mnt().string()}); });
    } else if (at == "restoring") {
      // Dies in the middle of a recovery's restore (after a death right after the injection).
      ASSERT_TRUE(cycle_killed_at(cfg, s->name, "injected", record_diff));
      killed = cycle_killed_at(cfg, s->name, "restoring");
    } else if (at == "scrubbing") {
      // The cycle scrubs only when the read-back did not settle the verdict: not every run gets here.
      killed = cycle_killed_at(cfg, s->name, at, record_diff);
      if (!killed) {
        std::cout << "killed at scrubbing: the read-back settled the verdict, no scrub this time\n";
        EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, s->name)));
        continue;
      }
    } else {
      killed = cycle_killed_at(cfg, s->name, at, record_diff);
    }
    ASSERT_TRUE(killed) << "the cycle never reached " << at << ": "
                        << read_file(cfg.state_dir / "child-report.json").value_or("");
    ASSERT_TRUE(fs::exists(inflight_path(cfg.state_dir, s->name)));
    auto mk = nlohmann::json::parse(*read_file(inflight_path(cfg.state_dir, s->name)));
    auto story = recover(cfg, s->name);
    std::cout << "killed at " << at << ": " << story << "\n";
    EXPECT_NE(story.find("found a pending cycle"), std::string::npos) << story;
    EXPECT_EQ(story.find("marker stays"), std::string::npos) << story;
    EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, s->name))) << story;
    EXPECT_FALSE(fs::exists(s->mnt() / kCanaryFile)) << story;
    EXPECT_TRUE(fs::exists(s->mnt() / kSignatureFile)) << "not mounted back: " << story;
    if (mk.contains("injection")) {
      std::string dev = mk["injection"]["device"], before = mk["injection"]["before"];
      std::uint64_t off = mk["injection"]["offset"], blk = mk["injection"]["block_offset"];
      auto cur = read_direct(dev, off, before.size() / 2);
      ASSERT_TRUE(cur);
      EXPECT_EQ(to_hex(*cur), before) << story;
      if (fs::exists(diff_file)) {
        // While offline, the injection was the only change on the members: one block, the target.
        EXPECT_EQ(*read_file(diff_file), dev + "@" + std::to_string(blk / 4096 * 4096) + "\n");
      }
    }
    EXPECT_EQ(digest_file(bystander.backing()), bystander_before);
  }
  // And the canary still works.
  auto r = cycle(cfg, s->name);
  EXPECT_EQ(r.verdict, Verdict::repaired) << r.to_json();
  EXPECT_EQ(digest_file(bystander.backing()), bystander_before);
}

// Recovery verifies before it touches anything. Here the canary is not mounted, its mount point
// directory lies on another filesystem (the "production" one), and mounting "succeeds" without
// mounting anything: no file there is removed, no counter cleared, the marker stays.
TEST(CanaryCrash, RecoveryNeverTouchesWhatIsNotTheVerifiedCanary) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir d("canary-f1");
  LoopDevice prod_dev(d.path(), "prod.img", 64 * MiB);
  ASSERT_TRUE(prod_dev.ok());
  must({"mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", prod_dev.device()});
  Mount prod(prod_dev.device(), d / "prod", "ext4", "noatime");
  ASSERT_TRUE(prod.ok()) << prod.error();
  LoopDevice can_dev(d.path(), "canary.img", 128 * MiB);
  ASSERT_TRUE(can_dev.ok());
  must({"mkfs.btrfs", "-f", "-q", can_dev.device()});
  fs::path mnt = d / "prod" / "canary";
  auto log = d / "btrfs.log";
  auto fake = d / "btrfs";
  // Reports errors for whatever it is asked about and logs every call; other commands go to btrfs.
  write_text(fake, "#!/bin/sh\necho \"$*\" >> " + log.string() +
                       "\nif [ \"$1 $2\" = \"device stats\" ]; then\n  if [ \"$3\" = -z ]; then exit 0; fi\n"
                       "  echo \"[" + can_dev.device() + "].write_io_errs    0\"\n  echo \"[" + can_dev.device() +
                       "].read_io_errs     0\"\n  echo \"[" + can_dev.device() + "].flush_io_errs    0\"\n  echo \"[" +
                       can_dev.device() + "].corruption_errs  7\"\n  echo \"[" + can_dev.device() +
                       "].generation_errs  0\"\n  exit 0\nfi\nexec /usr/bin/btrfs \"$@\"\n");
  ::chmod(fake.c_str(), 0755);
  std::string base = "state_dir: " + (d / "state").string() + "\ncanary:\n  canaries:\n    - {name: c, fs: btrfs, layout: single, devices: [" +
                     can_dev.device() + "], mountpoint: " + mnt.string() + "}\n";
  {
    Mount m(can_dev.device(), mnt, "btrfs");
    ASSERT_TRUE(m.ok()) << m.error();
    auto cfg = config::parse_config(base, "f1.yaml");
    ProcessRunner pr;
    auto in = init_canary(cfg, "c", pr);
    ASSERT_TRUE(in) << in.error();
  }
  // A crashed cycle's marker (after the injection phase would not matter: nothing is verified).
  write_text(inflight_path(d / "state", "c"), R"({"phase": "offline", "started": 1, "counters_before": 0})");
  write_text(mnt / kCanaryFile, "precious production data that happens to have this name");
  auto cfg = config::parse_config(base + "tools: {mount: /bin/true, btrfs: " + fake.string() + "}\n", "f1.yaml");
  ::sync();
  auto prod_before = digest_file(prod_dev.backing());
  for (int i = 0; i < 15; ++i) {  // the freshly made ext4 settles first (journal commits)
    DaemonProcess::sleep_ms(1000);
    ::sync();
    auto again = digest_file(prod_dev.backing());
    if (again == prod_before) break;
    prod_before = again;
  }
  auto story = recover(cfg, "c");
  EXPECT_NE(story.find("marker stays"), std::string::npos) << story;
  EXPECT_TRUE(fs::exists(inflight_path(cfg.state_dir, "c")));
  EXPECT_TRUE(fs::exists(mnt / kCanaryFile)) << story;
  auto calls = read_file(log).value_or("");
  EXPECT_EQ(calls.find("-z"), std::string::npos) << calls;
  ::sync();
  EXPECT_EQ(digest_file(prod_dev.backing()), prod_before);
}

// A marker whose injection names a device that is not a verified member is never written to, and
// the restore only ever runs with the canary offline.
TEST(CanaryCrash, RestoreOnlyToAVerifiedMember) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  LoopDevice other(s->dir->path(), "other.img", 8 * MiB);
  ASSERT_TRUE(other.ok());
  must({"dd", "if=/dev/urandom", "of=" + other.device(), "bs=1M", "count=8", "oflag=direct", "status=none"});
  // Shaped as a cycle's injection (bytes 512 into a 4 KiB block), so only the member check can refuse it.
  auto cur = read_direct(other.device(), MiB + 512, 16);
  ASSERT_TRUE(cur);
  nlohmann::json mk{{"phase", "injected"},
                    {"started", 1},
                    {"nonce", 5},
                    {"injection",
                     {{"device", other.device()}, {"offset", MiB + 512}, {"before", std::string(32, '0')}, {"after", to_hex(*cur)},
                      {"block_index", 0}, {"block_offset", MiB}, {"block_size", 4096}}}};
  write_text(inflight_path(cfg.state_dir, s->name), mk.dump());
  auto other_before = digest_file(other.backing());
  auto story = recover(cfg, s->name);
  EXPECT_NE(story.find("not a verified member"), std::string::npos) << story;
  EXPECT_NE(story.find("marker stays"), std::string::npos) << story;
  EXPECT_EQ(digest_file(other.backing()), other_before);
  EXPECT_TRUE(fs::exists(inflight_path(cfg.state_dir, s->name)));
}

// Issue 29.1: a marker forged to "restore" chosen bytes at a chosen offset of a verified member, where
// no cycle ever ran. Its block size is the length of its own bytes (so the block check would compare
// only what the forger chose), or below the block header: every variant is refused, nothing written.
TEST(CanaryCrash, AForgedInjectionIsNotOneACycleMakes) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  const std::string dev = s->devices().at(0);
  auto cur = read_direct(dev, MiB, 32);
  ASSERT_TRUE(cur);
  struct Forged {
    std::uint64_t offset, block_offset, block_size;
    std::size_t bytes;
  };
  for (auto f : {Forged{MiB, MiB, 32, 32}, Forged{MiB, MiB, 8, 8}, Forged{MiB, MiB, 23, 16}, Forged{MiB, MiB, 4096, 16},
                 Forged{MiB + 100, MiB, 4096, 4000}, Forged{MiB + 4090, MiB, 4096, 16}, Forged{MiB, MiB, 1u << 30, 16}}) {
    auto now = read_direct(dev, f.offset, f.bytes);
    ASSERT_TRUE(now);
    nlohmann::json mk{{"phase", "injected"},
                      {"started", 1},
                      {"nonce", 5},
                      {"injection",
                       {{"device", dev}, {"offset", f.offset}, {"before", std::string(2 * f.bytes, 'a')}, {"after", to_hex(*now)},
                        {"block_index", 0}, {"block_offset", f.block_offset}, {"block_size", f.block_size}}}};
    write_text(inflight_path(cfg.state_dir, s->name), mk.dump());
    // The canary is mounted: what btrfs has yet to commit (init's signature) would land on the member
    // between the two readings (seen once on a loaded machine); written out first, nothing is pending.
    ::sync();
    auto before = block_hashes(dev);
    auto story = recover(cfg, s->name);
    EXPECT_NE(story.find("not one a cycle makes"), std::string::npos) << f.block_size << ": " << story;
    EXPECT_NE(story.find("marker stays"), std::string::npos) << story;
    EXPECT_EQ(block_hashes(dev), before) << "block size " << f.block_size << " wrote to the member";
    auto back = read_direct(dev, f.offset, f.bytes);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, *now);
  }
  fs::remove(inflight_path(cfg.state_dir, s->name));
}

// The layout word is checked against what the filesystem reports (its stack model) before anything
// is touched: a single-copy btrfs configured as raid1 is an error, not a verdict about a stack that is
// not there; the canary is left clean.
TEST(CanaryLayout, CopiesFoundMustMatchTheLayout) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  s->layout = "raid1";
  auto cfg = s->config();
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto r = cycle(cfg, s->name);
  EXPECT_EQ(r.verdict, Verdict::error) << r.to_json();
  EXPECT_NE(r.reason.find("the configured layout raid1 is not the filesystem's (single)"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.injection.has_value());
  expect_clean_after_cycle(*s, cfg);
}

// `canary init` signs only an empty filesystem, unless forced with a reason.
TEST(CanaryInitLab, RefusesAFilesystemWithDataUnlessForced) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("ext4");
  ASSERT_TRUE(s);
  write_text(s->mnt() / "important.txt", "production data");
  auto cfg = s->config();
  ProcessRunner pr;
  auto in = init_canary(cfg, s->name, pr);
  ASSERT_FALSE(in);
  EXPECT_NE(in.error().find("not empty"), std::string::npos) << in.error();
  EXPECT_FALSE(fs::exists(s->mnt() / kSignatureFile));
  EXPECT_FALSE(init_canary(cfg, s->name, pr, InitOptions{true, ""}));
  auto forced = init_canary(cfg, s->name, pr, InitOptions{true, "dedicated test partition, the file is a dummy"});
  EXPECT_TRUE(forced) << forced.error();
  EXPECT_TRUE(fs::exists(s->mnt() / kSignatureFile));
}

// ------------------------------------------------------------------ concurrency
// Two daemons and a CLI against one canary at the same moment: exactly one cycle runs, the others
// are refused with a reason. (umount is slowed by 4 s so that the three certainly overlap.)
TEST(CanaryConcurrency, TwoDaemonsAndACliRunExactlyOneCycle) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-raid1");
  ASSERT_TRUE(s);
  auto slow = s->dir->path() / "slow-umount";
  write_text(slow, "#!/bin/sh\nsleep 4\nexec umount \"$@\"\n");
  ::chmod(slow.c_str(), 0755);
  std::string canary = s->yaml(s->devices(), s->mnt().string(), "      interval: 1h\n") + "tools: {umount: " + slow.string() + "}\n";
  auto cfg = config::parse_config(canary, "conc.yaml");
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  TempDir d1("canary-conc-a"), d2("canary-conc-b");
  int p1 = free_port(), p2 = free_port();
  auto yaml = [&](int port) { return "listen: 127.0.0.1:" + std::to_string(port) + "\ntargets: {discover: false}\n" + canary; };
  auto cli_cfg = d1 / "cli.yaml";
  write_text(cli_cfg, canary);
  DaemonProcess a(d1.path(), yaml(p1), p1);
  DaemonProcess b(d2.path(), yaml(p2), p2);
  auto cli = run({fsauditd_binary(), "canary", "run", s->name, "--config", cli_cfg.string()}, 300);
  std::string probe = "canary:" + s->name;
  auto done = [&](const std::string& t) { return scrape_value(t, "fsaudit_probe_runs_total", {{"probe", probe}}) >= 1; };
  auto ta = a.wait_for(done, 240), tb = b.wait_for(done, 240);
  ASSERT_TRUE(done(ta)) << a.log();
  ASSERT_TRUE(done(tb)) << b.log();
  int ran = 0, refused = 0;
  if (cli.exit_code == 2 && cli.err.find("busy") != std::string::npos) ++refused;
  else if (cli.out.find("\"verdict\"") != std::string::npos) ++ran;
  for (const auto* t : {&ta, &tb}) {
    auto failure = scrape_lines(*t, "fsaudit_probe_failure_info");
    if (failure.find(probe) != std::string::npos && failure.find("busy") != std::string::npos) ++refused;
    else if (scrape_value(*t, "fsaudit_canary_last_verdict", {{"target", s->name}, {"verdict", "repaired"}}) == 1) ++ran;
  }
  EXPECT_EQ(ran, 1) << "cli: rc " << cli.exit_code << " " << cli.err << "\n" << scrape_lines(ta, "fsaudit_probe_failure_info")
                    << scrape_lines(tb, "fsaudit_probe_failure_info");
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(load_state(cfg.state_dir, s->name).cycles, 1u);
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, s->name)));
  expect_clean_after_cycle(*s, cfg);
}

// A daemon stopped in the middle of a cycle (here while the corrupted canary is being mounted
// again, which takes 5 s) still restores and remounts its canary before it exits.
TEST(CanaryStop, StopMidCycleLeavesTheCanaryCleanAndOnline) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-single");
  ASSERT_TRUE(s);
  auto slow = s->dir->path() / "slow-mount";
  write_text(slow, "#!/bin/sh\nsleep 5\nexec mount \"$@\"\n");
  ::chmod(slow.c_str(), 0755);
  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\ntargets: {discover: false}\n" +
                     s->yaml(s->devices(), s->mnt().string(), "      interval: 1h\n") + "tools: {mount: " + slow.string() + "}\n";
  auto cfg = config::parse_config(yaml, "stop.yaml");
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  TempDir d("canary-stop");
  DaemonProcess dp(d.path(), yaml, port);
  std::string phase;
  for (int i = 0; i < 600 && phase != "injected"; ++i) {
    DaemonProcess::sleep_ms(50);
    auto t = read_file(inflight_path(cfg.state_dir, s->name));
    if (t) try {
        phase = nlohmann::json::parse(*t).value("phase", "");
      } catch (...) {
      }
  }
  ASSERT_EQ(phase, "injected") << dp.log();
  auto mk = nlohmann::json::parse(*read_file(inflight_path(cfg.state_dir, s->name)));
  EXPECT_EQ(dp.stop(150), 0) << dp.log();
  EXPECT_FALSE(fs::exists(inflight_path(cfg.state_dir, s->name))) << dp.log();
  EXPECT_TRUE(fs::exists(s->mnt() / kSignatureFile)) << "the canary was left offline\n" << dp.log();
  EXPECT_FALSE(fs::exists(s->mnt() / kCanaryFile));
  EXPECT_EQ(load_state(cfg.state_dir, s->name).cycles, 1u);
}

// ------------------------------------------------------------------ privilege separation
// fsauditd as an unprivileged user (uid nobody, no capabilities) runs a canary cycle through the
// real fsaudit-helper, socket-activated the way systemd does it (Accept=yes with the connection on
// stdin/stdout: systemd-socket-activate --accept --inetd).
TEST(CanaryHelperLab, UnprivilegedDaemonRunsTheCycleThroughTheHelper) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto s = make_stack("btrfs-raid1");
  ASSERT_TRUE(s);
  ::chmod(s->dir->path().c_str(), 0755);
  TempDir d("canary-priv");
  ::chmod(d.path().c_str(), 0755);
  auto sock = d / "helper.sock";
  auto helper_state = d / "helper-state";
  fs::create_directories(s->state());
  ASSERT_EQ(::chown(s->state().c_str(), 65534, 65534), 0);
  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\ntargets: {discover: false}\n" +
                     s->yaml(s->devices(), s->mnt().string(), "      interval: 1h\n  helper: " + sock.string() + "\n");
  auto cfgf = d / "fsaudit.yaml";
  write_text(cfgf, yaml);
  ::chmod(cfgf.c_str(), 0644);
  auto cfg = config::parse_config(yaml, cfgf.string());
  cfg.state_dir = helper_state;  // the canary is initialised for the helper's state
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, s->name, pr));
  auto spawn = [](const std::vector<std::string>& argv, const fs::path& log, bool open_umask) {
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      if (open_umask) ::umask(0);  // the socket must be connectable by the unprivileged daemon
      std::vector<char*> a;
      for (auto& x : argv) a.push_back(const_cast<char*>(x.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
    return pid;
  };
  pid_t activator = spawn({"/usr/bin/systemd-socket-activate", "--accept", "--inetd", "-l", sock.string(), FSAUDIT_HELPER_BINARY,
                           "--config", cfgf.string(), "--state-dir", helper_state.string(), "--allow-user", "nobody"},
                          d / "activate.log", true);
  for (int i = 0; i < 100 && !fs::exists(sock); ++i) DaemonProcess::sleep_ms(50);
  ASSERT_TRUE(fs::exists(sock)) << *read_file(d / "activate.log");
  // What SocketMode=0660 + SocketGroup=fsaudit give the daemon's user in the shipped unit.
  ::chmod(sock.c_str(), 0666);
  pid_t daemon = spawn({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        "--bounding-set=-all", fsauditd_binary(), "--config", cfgf.string()},
                       d / "fsauditd.log", false);
  struct Reap {
    pid_t a, b;
    ~Reap() {
      for (pid_t p : {b, a}) {
        ::kill(p, SIGTERM);
        int st;
        ::waitpid(p, &st, 0);
      }
    }
  } reap{activator, daemon};
  std::string text;
  for (int i = 0; i < 1200; ++i) {
    text = http_get(port, "/metrics");
    if (scrape_value(text, "fsaudit_canary_last_verdict", {{"target", s->name}, {"verdict", "repaired"}}) == 1) break;
    if (scrape_value(text, "fsaudit_probe_runs_total", {{"probe", "canary:" + s->name}}) >= 1) break;  // ran, not repaired
    DaemonProcess::sleep_ms(100);
  }
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_last_verdict", {{"target", s->name}, {"verdict", "repaired"}}), 1)
      << scrape_lines(text, "fsaudit_probe_failure_info") << *read_file(d / "fsauditd.log") << *read_file(d / "activate.log");
  auto status = read_file("/proc/" + std::to_string(daemon) + "/status").value_or("");
  EXPECT_NE(status.find("Uid:\t65534\t65534\t65534\t65534"), std::string::npos) << status;
  EXPECT_NE(status.find("CapEff:\t0000000000000000"), std::string::npos) << status;
  EXPECT_EQ(load_state(helper_state, s->name).cycles, 1u);
  EXPECT_EQ(load_state(s->state(), s->name).cycles, 1u);
  EXPECT_FALSE(fs::exists(inflight_path(helper_state, s->name)));
  EXPECT_TRUE(fs::exists(s->mnt() / kSignatureFile));
  EXPECT_FALSE(fs::exists(s->mnt() / kCanaryFile));
}

// ------------------------------------------------------------------ lab class
TEST(CanaryLab, BuildsSignsAddsAndTearsDown) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir d("canary-labclass");
  auto cfg = config::parse_config("state_dir: " + (d / "state").string() +
                                      "\ncanary: {lab: {enabled: true, stacks: [btrfs-single, ext4]}}\n",
                                  "lab.yaml");
  {
    auto lab = Lab::setup(cfg);
    ASSERT_TRUE(lab) << lab.error();
    EXPECT_EQ((*lab)->canaries(), (std::vector<std::string>{"lab-btrfs-single", "lab-ext4"}));
    ASSERT_EQ(cfg.canary.canaries.size(), 2u);
    // A reloaded config gets the lab canaries back.
    auto reloaded = config::parse_config("state_dir: " + (d / "state").string() + "\n", "reload.yaml");
    (*lab)->add_to(reloaded);
    EXPECT_EQ(reloaded.canary.canaries.size(), 2u);
    auto r = cycle(cfg, "lab-ext4");
    EXPECT_EQ(r.verdict, Verdict::silent) << r.to_json();
    auto r2 = cycle(cfg, "lab-btrfs-single");
    EXPECT_EQ(r2.verdict, Verdict::detected) << r2.to_json();
  }
  // By backing file, not by device name: another process may attach the freed /dev/loopN at once.
  std::string loops_after = run({"losetup", "-a"}).out;
  EXPECT_EQ(loops_after.find((d / "state" / "lab").string()), std::string::npos) << loops_after;
  auto mi = *read_file("/proc/self/mountinfo");
  EXPECT_EQ(mi.find((d / "state" / "lab").string()), std::string::npos) << "lab mount left behind";
}

// ------------------------------------------------------------------ the real daemon
// The stack as one entry of a daemon's canary.canaries list (interval 1h: only the first run is scheduled in a test).
std::string entry(const Stack& s) {
  std::string devs;
  for (auto& x : s.devices()) devs += (devs.empty() ? "" : ", ") + x;
  return "    - {name: " + s.name + ", fs: " + s.fs_ + ", layout: " + s.layout + ", devices: [" + devs +
         "], mountpoint: " + s.mnt().string() + ", interval: 1h}\n";
}

TEST(CanaryDaemon, VerdictAndMetricInARealScrapeAndCrashRecovery) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto raid = make_stack("btrfs-raid1");
  ASSERT_TRUE(raid);
  auto xfs = make_stack("xfs");
  ASSERT_TRUE(xfs);
  TempDir d("canary-daemon");
  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ntargets: {discover: false}\ncanary:\n  canaries:\n" + entry(*raid) + entry(*xfs);
  auto cfg = config::parse_config(yaml, "daemon.yaml");
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, raid->name, pr));
  ASSERT_TRUE(init_canary(cfg, xfs->name, pr));
  // A cycle killed between injection and repair (as a daemon killed mid-cycle leaves it).
  ASSERT_TRUE(cycle_killed_at(cfg, raid->name, "injected"));
  ASSERT_TRUE(fs::exists(inflight_path(cfg.state_dir, raid->name)));
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
    // zfs-fuse is already running (zf holds the machine-wide lock): the lab uses it as it is.
    DaemonProcess dp(d.path(), yaml, port);
    auto all = [&](const std::string& t) {
      for (const auto& [name, verdict] : want)
        if (scrape_value(t, "fsaudit_canary_last_verdict", {{"target", name}, {"verdict", verdict}}) != 1) return false;
      return true;
    };
    auto text = dp.wait_for(all, 300);
    for (const auto& [name, verdict] : want) {
      EXPECT_EQ(scrape_value(text, "fsaudit_canary_last_verdict", {{"target", name}, {"verdict", verdict}}), 1)
          << name << "\n" << scrape_lines(text, "fsaudit_canary_last_verdict") << "\n" << dp.log();
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

namespace fsaudit::canary {
namespace {

// An operator's first canary, over D-Bus: the daemon starts with two unsigned btrfs canaries (their
// scheduled run is refused), `fsauditctl canary init` signs them, and a run asked for now reports
// its job, its progress, the completion signal and the verdict, which `canary status` then shows.
// Manual runs are runs of the probe: they count in its self-metrics like scheduled ones.
TEST(CanaryDBus, InitThenRunNowOverTheBus) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(lab_tool_missing("dbus-daemon", "dbus"));
  auto raid = make_stack("btrfs-raid1");
  ASSERT_TRUE(raid);
  auto single = make_stack("btrfs-single");
  ASSERT_TRUE(single);
  TempDir d("canary-dbus");
  PrivateBus bus(d.path());
  ASSERT_FALSE(bus.address().empty());
  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ndbus_address: " + bus.address() + "\ntargets: {discover: false}\nlatency: {enabled: false}\ncanary:\n  canaries:\n" +
                     entry(*raid) + entry(*single);
  DaemonProcess dp(d.path(), yaml, port);
  const std::string praid = "canary:" + raid->name, psingle = "canary:" + single->name;
  auto runs = [](const std::string& text, const std::string& probe) {
    return scrape_value(text, "fsaudit_probe_runs_total", {{"probe", probe}});
  };
  // The scheduled first runs (interval 1h, so the only ones in this test) find no signature.
  auto text = dp.wait_for([&](const std::string& t) { return runs(t, praid) >= 1 && runs(t, psingle) >= 1; }, 240);
  ASSERT_EQ(runs(text, praid), 1) << dp.log();
  ASSERT_EQ(runs(text, psingle), 1) << dp.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_success", {{"probe", praid}}), 0) << scrape_lines(text, "fsaudit_probe_failure_info");
  auto ctl = [&](std::vector<std::string> args) { return run_ctl(FSAUDITCTL_BINARY, bus.address(), args, "", 600); };
  for (int i = 0; i < 600 && ctl({"status"}).exit_code != 0; ++i) DaemonProcess::sleep_ms(100);

  for (const auto* s : {raid.get(), single.get()}) {
    auto in = ctl({"canary", "init", s->name});
    EXPECT_EQ(in.exit_code, 0) << in.out << in.err << dp.log();
    EXPECT_NE(in.out.find("done: " + s->name + ": canary " + s->name + " initialised"), std::string::npos) << in.out;
    EXPECT_TRUE(fs::exists(s->mnt() / kSignatureFile));
  }

  // The D-Bus job API: a job id at once, its state while it runs, JobFinished with the verdict.
  Bus api(bus.address());
  ASSERT_TRUE(api.watch_jobs());
  sd_bus_message* m = nullptr;
  std::string msg;
  ASSERT_EQ(api.call("RunCanary", &m, &msg, "s", raid->name.c_str()), "") << msg;
  std::uint64_t job = 0;
  sd_bus_message_read(m, "t", &job);
  sd_bus_message_unref(m);
  ASSERT_GT(job, 0u);
  ASSERT_EQ(api.call("GetJob", &m, &msg, "t", job), "") << msg;
  const char *kind = nullptr, *subject = nullptr, *state = nullptr, *result = nullptr;
  sd_bus_message_read(m, "ssss", &kind, &subject, &state, &result);
  EXPECT_STREQ(kind, "probe");
  EXPECT_EQ(std::string(subject), praid + " on host");
  EXPECT_TRUE(std::string(state) == "queued" || std::string(state) == "running" || std::string(state) == "done") << state;
  sd_bus_message_unref(m);
  auto fin = api.wait_finished(job, 600);
  ASSERT_TRUE(fin.arrived) << dp.log();
  EXPECT_EQ(fin.state, "done");
  EXPECT_EQ(fin.result, "verdict repaired");
  ASSERT_EQ(api.call("GetJob", &m, &msg, "t", job), "") << msg;
  sd_bus_message_read(m, "ssss", &kind, &subject, &state, &result);
  EXPECT_STREQ(state, "done");
  EXPECT_STREQ(result, "verdict repaired");
  sd_bus_message_unref(m);

  // fsauditctl: canary run --wait (JSON), and run PROBE --wait (text) on the single-copy canary.
  auto r = ctl({"--json", "canary", "run", single->name, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << dp.log();
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["state"], "done") << r.out;
  EXPECT_EQ(j["result"], "verdict detected") << r.out;
  EXPECT_EQ(j["subject"], psingle + " on host");
  r = ctl({"run", psingle, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("done: " + psingle + " on host: verdict detected"), std::string::npos) << r.out;

  // What the operator reads afterwards.
  r = ctl({"canary", "status", raid->name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("canary " + raid->name + " (btrfs raid1, mounted at " + raid->mnt().string() + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last verdict: repaired"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected:     repaired (met)"), std::string::npos) << r.out;
  r = ctl({"--json", "canary", "status", single->name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "detected") << r.out;
  EXPECT_EQ(j["expectation_met"], true) << r.out;
  EXPECT_NE(j["story"].get<std::string>().find("detected"), std::string::npos) << r.out;

  // Self-metrics: every manual run is a run of the probe (1 scheduled + 1 or 2 asked for).
  text = dp.scrape();
  EXPECT_EQ(runs(text, praid), 2) << scrape_lines(text, "fsaudit_probe_runs_total");
  EXPECT_EQ(runs(text, psingle), 3) << scrape_lines(text, "fsaudit_probe_runs_total");
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_success", {{"probe", praid}}), 1) << scrape_lines(text, "fsaudit_probe_failure_info");
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_failures_total", {{"probe", praid}}), 1);
  EXPECT_EQ(scrape_value(text, "fsaudit_canary_runs_total", {{"target", single->name}, {"verdict", "detected"}}), 2);
  EXPECT_EQ(dp.stop(120), 0) << dp.log();
  auto cfg = config::parse_config(yaml, "dbus.yaml");
  expect_clean_after_cycle(*raid, cfg);
  expect_clean_after_cycle(*single, cfg);
}

// ------------------------------------------------------------------ the hostile daemon, canary part
// Issue 29: the real fsaudit-helper behind a private socket, asked by the daemon's user (nobody) to
// run a canary whose state in the helper's directory was forged: state files replaced by symlinks to
// a root-owned file, a stale marker from an earlier cycle, a marker and a record naming the other
// canary's device, a record of a canary root's config does not have, oversized files. Each is
// refused with its reason; no byte of either canary's device or of the root-owned file changes.
// Then an honest cycle through the same helper still runs.
TEST(HostileCanaryDaemon, EveryForgedStateFileIsRefusedAndNothingIsWritten) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  auto a = make_stack("btrfs-single");
  ASSERT_TRUE(a);
  auto b = make_stack("btrfs-single");
  ASSERT_TRUE(b);
  a->name = "hostile-a";
  b->name = "hostile-b";
  TempDir d("canary-hostile");
  auto helper_state = d / "helper-state";
  fs::create_directories(helper_state);
  ::chmod(helper_state.c_str(), 0700);
  std::string yaml = "state_dir: " + helper_state.string() + "\ndbus_address: none\ncanary:\n  canaries:\n" + entry(*a) + entry(*b);
  auto cfgf = trusted_config(d, yaml);
  auto cfg = config::parse_config(yaml, cfgf.string());
  ProcessRunner pr;
  ASSERT_TRUE(init_canary(cfg, a->name, pr));
  ASSERT_TRUE(init_canary(cfg, b->name, pr));
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfgf.string(), "--state-dir", helper_state.string(),
                               "--allow-user", "nobody"});
  ASSERT_TRUE(sock.ok());
  Nobody nobody;
  auto ask = [&](const std::string& canary) {
    return run_as(nobody.uid, nobody.gid, [&]() -> std::string {
      auto r = helper_exchange(sock.path(), nlohmann::json{{"verb", "canary-run"}, {"canary", canary}}.dump(),
                               std::chrono::seconds(300));
      return r ? *r : "client error: " + r.error();
    });
  };
  const std::string dev_a = a->devices().at(0), dev_b = b->devices().at(0);
  auto root_file = d / "root-owned.json";  // what a forger would like root to read (or write)
  auto dir_a = canary_state_dir(helper_state, a->name);
  auto record_a = dir_a / "identity.json", marker_a = inflight_path(helper_state, a->name);
  const std::string good_record_a = *read_file(record_a), good_record_b = *read_file(canary_state_dir(helper_state, b->name) / "identity.json");
  auto rec_a = parse_record(good_record_a, a->name), rec_b = parse_record(good_record_b, b->name);
  ASSERT_TRUE(rec_a && rec_b);
  // A marker shaped as a cycle writes it (a 4 KiB block, 16 bytes 512 into it), whose "after" bytes
  // are what the device holds there now.
  auto forged_marker = [&](const std::string& dev) {
    auto now = read_direct(dev, MiB + 512, 16);
    EXPECT_TRUE(now);
    Marker m;
    m.phase = "injected";
    m.started = 1;
    m.nonce = 7;
    m.pid = 1;
    m.boot_id = "an-earlier-boot";
    m.injection = Injection{dev, MiB + 512, std::string(32, 'a'), now ? to_hex(*now) : "", 0, MiB, 4096};
    return marker_text(m);
  };
  write_text(root_file, forged_marker(dev_a));
  auto settled = [&] {
    std::vector<std::vector<std::size_t>> h;
    for (int i = 0; i < 15; ++i) {
      ::sync();
      auto again = std::vector<std::vector<std::size_t>>{block_hashes(dev_a), block_hashes(dev_b)};
      if (again == h) break;
      h = again;
      DaemonProcess::sleep_ms(1000);
    }
    return h;
  };
  const auto before = settled();
  const auto root_file_before = digest_file(root_file);
  ASSERT_FALSE(before.at(0).empty());

  struct Case {
    const char* what;
    std::function<void()> forge;
    std::string canary;
    std::vector<std::string> why;
  };
  auto record_naming_b = [&] {
    auto r = *rec_a;
    r.devices = rec_b->devices;
    r.devices[0].path = rec_a->devices[0].path;  // the path of A, the identity of B's device
    return record_text(r);
  };
  auto ghost = [&] {
    auto r = *rec_a;
    r.name = "ghost";
    fs::create_directories(canary_state_dir(helper_state, "ghost"));
    write_text(canary_state_dir(helper_state, "ghost") / "identity.json", record_text(r));
  };
  const std::vector<Case> cases = {
      {"identity.json is a symlink to a root-owned file",
       [&] {
         write_text(d / "record-copy.json", good_record_a);
         fs::remove(record_a);
         fs::create_symlink(d / "record-copy.json", record_a);
       },
       a->name, {"is a symlink", "not followed"}},
      {"identity.json names the other canary's device", [&] { write_text(record_a, record_naming_b()); }, a->name,
       {"device identity changed"}},
      {"identity.json is oversized", [&] { write_text(record_a, good_record_a + std::string(70 << 10, ' ')); }, a->name,
       {"more than"}},
      {"a record of a canary that is not in root's config", ghost, "ghost", {"not a canary in the helper's config"}},
      {"inflight.json is a symlink to a root-owned file", [&] { fs::create_symlink(root_file, marker_a); }, a->name,
       {"is unreadable", "is a symlink", "marker stays"}},
      {"inflight.json is oversized", [&] { write_text(marker_a, forged_marker(dev_a) + std::string(70 << 10, ' ')); }, a->name,
       {"is unreadable", "more than", "marker stays"}},
      {"a marker naming the other canary's device", [&] { write_text(marker_a, forged_marker(dev_b)); }, a->name,
       {"is not a verified member", "marker stays"}},
      {"a stale marker from an earlier cycle", [&] { write_text(marker_a, forged_marker(dev_a)); }, a->name,
       {"earlier boot", "restore failed", "marker stays"}},
  };
  // Refused before anything is taken offline: neither device changes. A marker naming B's device is
  // refused after A was taken offline (its unmount is A's own write), so from then on A is compared
  // with itself offline, and B with the start.
  std::vector<std::size_t> a_offline;
  for (const auto& c : cases) {
    c.forge();
    auto out = ask(c.canary);
    for (const auto& why : c.why) EXPECT_NE(out.find(why), std::string::npos) << c.what << ": " << out;
    EXPECT_EQ(out.find("\"verdict\":\"repaired\""), std::string::npos) << c.what << ": " << out;
    // Put the honest state back for the next case.
    std::error_code ec;
    fs::remove(marker_a, ec);
    fs::remove(record_a, ec);
    write_text(record_a, good_record_a);
    ::chmod(record_a.c_str(), 0600);
    fs::remove_all(canary_state_dir(helper_state, "ghost"), ec);
    ::sync();
    bool offline = !fs::exists(a->mnt() / kSignatureFile);
    if (!offline) EXPECT_EQ(block_hashes(dev_a), before.at(0)) << c.what << ": root wrote to canary A";
    else if (a_offline.empty()) a_offline = block_hashes(dev_a);
    else EXPECT_EQ(block_hashes(dev_a), a_offline) << c.what << ": root wrote to canary A";
    EXPECT_EQ(block_hashes(dev_b), before.at(1)) << c.what << ": root wrote to canary B";
  }
  EXPECT_FALSE(a_offline.empty()) << "no case took A offline: the marker cases did not get as far as the member check";
  EXPECT_EQ(digest_file(root_file), root_file_before);
  // The refusals after taking A offline leave it so (a person decides); mount it back for the teardown.
  if (!fs::exists(a->mnt() / kSignatureFile)) must({"mount", dev_a, a->mnt().string()});
  // Honest state: the same helper runs the cycle (B was never taken offline by a refusal).
  auto out = ask(b->name);
  EXPECT_NE(out.find("\"verdict\":\"detected\""), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(inflight_path(helper_state, b->name)));
}

}  // namespace
}  // namespace fsaudit::canary
