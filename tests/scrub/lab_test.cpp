// Lab tests: the scrub probe (directly, with the real ProcessRunner and host paths) and the real
// fsauditd run scrubs on loop devices and read the results back.
//   * btrfs raid1 on two loop devices, a few bytes of one copy of a file overwritten on one raw
//     device: fsaudit starts the scrub, times it, errors found = repaired >= 1, uncorrectable 0.
//   * btrfs -d single: the same corruption is uncorrectable (>= 1; btrfs scrub exits 3).
//   * ZFS mirror of two file vdevs through zfs-fuse (only under testing::ZfsFuse): scrub started,
//     timed and read back.
//   * XFS: where the kernel has no online scrub (CONFIG_XFS_ONLINE_SCRUB unset) it is reported as
//     unsupported, not as a failure; where it has, the scrub runs and ends.
//   * the same btrfs raid1 case through a real daemon scrape.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/scrub/probe.hpp"
#include "probes/zfs/probe.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::scrub {
namespace {

using testing::LoopDevice;
using testing::Mount;
using testing::TempDir;

const std::string kPattern = "FSAUDIT-SCRUB-PATTERN-";

void write_pattern(const std::filesystem::path& file) {
  std::ofstream f(file);
  char line[64];
  for (int i = 0; i < 4000; ++i) {
    std::snprintf(line, sizeof line, "%s%08d\n", kPattern.c_str(), i);
    f << line;
  }
}

// Overwrites 8 bytes of the first copy of line 100 found in `backing`; returns its offset or -1.
long long corrupt(const std::filesystem::path& backing) {
  auto text = read_file(backing, 1ull << 30);
  if (!text) return -1;
  auto needle = kPattern + "00000100";
  auto pos = text->find(needle);
  if (pos == std::string::npos) return -1;
  std::fstream f(backing, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(pos));
  f.write("XXXXXXXX", 8);
  f.flush();
  return static_cast<long long>(pos);
}

// The 8 bytes at `offset` as the filesystem will read them: from the loop device, bypassing every
// page cache (O_DIRECT), so a corruption the kernel cannot see fails the setup, not the scrub.
std::string read_direct(const std::string& device, long long offset) {
  int fd = ::open(device.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return "open failed";
  void* buf = nullptr;
  if (::posix_memalign(&buf, 4096, 4096) != 0) {
    ::close(fd);
    return "no memory";
  }
  long long block = offset / 4096 * 4096;
  ssize_t n = ::pread(fd, buf, 4096, block);
  std::string out = n == 4096 ? std::string(static_cast<char*>(buf) + (offset - block), 8) : "short read";
  std::free(buf);
  ::close(fd);
  return out;
}

// The detach helper fsauditd finds beside itself; a test binary names it.
ToolPaths lab_tools() {
  ToolPaths t;
  t["fsaudit-scrub-detach"] = FSAUDIT_SCRUB_DETACH_BINARY;
  return t;
}

struct DirectProbe {
  TempDir& dir;
  config::Config cfg;
  ProcessRunner runner;
  HostPaths host;
  ToolPaths tools = lab_tools();
  std::unique_ptr<ScrubProbe> probe;
  DirectProbe(TempDir& d, const std::string& yaml, const std::string& mount)
      : dir(d), cfg(config::parse_config(yaml, "lab.yaml")) {
    if (!mount.empty()) cfg.targets.include = {mount};
    probe = std::make_unique<ScrubProbe>(cfg.scrub, cfg.targets);
    std::filesystem::create_directories(dir / "state");
  }
  ProbeResult run() {
    ProbeContext ctx{host, runner, SystemClock::instance(), tools, dir / "state", {},
                     std::chrono::steady_clock::now() + std::chrono::seconds(20)};
    return probe->run(Target::host(), ctx);
  }
  // Runs every 500 ms until `name{labels}` appears (or timeout); returns the last result.
  ProbeResult run_until(const std::string& name, const metrics::Labels& labels, int timeout_s = 60) {
    ProbeResult r = run();
    for (int i = 0; i < timeout_s * 2 && !r.metrics.has(name, labels); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      r = run();
    }
    return r;
  }
};

const char* kBtrfsYaml = "scrub:\n  filesystems: [btrfs]\n  spread: 0\n  io_load_threshold: 0\n";

struct BtrfsLab {
  TempDir dir{"fsaudit-scrub-lab"};
  std::unique_ptr<LoopDevice> a, b;
  std::unique_ptr<Mount> mount;
  std::filesystem::path mnt = dir / "mnt";
  long long corrupted_at = -1;
  std::string error;

  // profile "raid1": two devices, data+metadata raid1; "single": one device, -d single -m dup.
  explicit BtrfsLab(const std::string& profile) {
    std::filesystem::create_directories(mnt);
    a = std::make_unique<LoopDevice>(dir.path(), "a.img", 160ull << 20);
    std::vector<std::string> mkfs = {"mkfs.btrfs", "-q", "-f"};
    if (profile == "raid1") {
      b = std::make_unique<LoopDevice>(dir.path(), "b.img", 160ull << 20);
      if (!a->ok() || !b->ok()) { error = "losetup failed"; return; }
      mkfs.insert(mkfs.end(), {"-d", "raid1", "-m", "raid1", a->device(), b->device()});
    } else {
      if (!a->ok()) { error = "losetup failed"; return; }
      mkfs.insert(mkfs.end(), {"-d", "single", "-m", "dup", a->device()});
    }
    auto c = testing::run(mkfs);
    if (!c.ok()) { error = "mkfs.btrfs: " + c.err; return; }
    {
      Mount m(a->device(), mnt, "btrfs");
      if (!m.ok()) { error = "mount: " + m.error(); return; }
      write_pattern(mnt / "pattern");
      testing::run({"sync"});
      m.unmount();
    }
    if (!std::string(trim(testing::run({"findmnt", "-n", "-o", "TARGET", mnt.string()}).out)).empty()) {
      error = "could not unmount " + mnt.string() + " before corrupting it";
      return;
    }
    corrupted_at = corrupt(a->backing());
    if (corrupted_at < 0) { error = "pattern not found on " + a->backing().string(); return; }
    if (auto seen = read_direct(a->device(), corrupted_at); seen != "XXXXXXXX") {
      error = "corruption not visible on " + a->device() + " (read '" + seen + "')";
      return;
    }
    mount = std::make_unique<Mount>(a->device(), mnt, "btrfs");
    if (!mount->ok()) error = "remount: " + mount->error();
  }
  ~BtrfsLab() {
    mount.reset();  // unmount before the loop devices go
  }
};

TEST(ScrubLab, BtrfsRaid1CorruptionFoundAndRepairedByAScrubFsauditStarts) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  BtrfsLab lab("raid1");
  ASSERT_TRUE(lab.error.empty()) << lab.error;
  DirectProbe p(lab.dir, kBtrfsYaml, lab.mnt.string());
  metrics::Labels l{{"target", lab.mnt.string()}, {"fs", "btrfs"}};
  auto first = p.run();
  ASSERT_EQ(first.outcome, fsaudit::Outcome::ok) << first.reason;
  EXPECT_TRUE(first.metrics.has("fsaudit_scrub_decision_info", {{"target", lab.mnt.string()}, {"code", "start"}}));
  auto r = p.run_until("fsaudit_scrub_last_end_timestamp_seconds", l);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l)) << "scrub never ended";
  double found = r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "found"}});
  double repaired = r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "repaired"}});
  double unc = r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "uncorrectable"}});
  EXPECT_GE(found, 1);
  EXPECT_EQ(found, repaired);
  EXPECT_EQ(unc, 0);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_duration_seconds", l));
  EXPECT_GE(r.metrics.value("fsaudit_scrub_last_duration_seconds", l), 0);
  EXPECT_GT(r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l), 100000);
  EXPECT_GT(r.metrics.value("fsaudit_scrub_last_start_timestamp_seconds", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", lab.mnt.string()}, {"result", "errors"}}), 1);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_result_info", {{"target", lab.mnt.string()}, {"started_by", "fsaudit"}}));
  EXPECT_LT(r.metrics.value("fsaudit_scrub_last_completed_age_seconds", l), 120);
  // Not due again: the next run does not start another scrub.
  auto again = p.run();
  EXPECT_TRUE(again.metrics.has("fsaudit_scrub_decision_info", {{"target", lab.mnt.string()}, {"code", "not_due"}}));
  EXPECT_EQ(again.metrics.value("fsaudit_scrub_runs_total", {{"target", lab.mnt.string()}, {"result", "errors"}}), 1);
  std::printf("[measure] btrfs raid1 scrub: duration %.0f s, %.0f bytes, found %.0f repaired %.0f\n",
              r.metrics.value("fsaudit_scrub_last_duration_seconds", l),
              r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l), found, repaired);
}

TEST(ScrubLab, BtrfsSingleCorruptionIsUncorrectable) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  BtrfsLab lab("single");
  ASSERT_TRUE(lab.error.empty()) << lab.error;
  DirectProbe p(lab.dir, kBtrfsYaml, lab.mnt.string());
  metrics::Labels l{{"target", lab.mnt.string()}, {"fs", "btrfs"}};
  auto r = p.run_until("fsaudit_scrub_last_end_timestamp_seconds", l);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l)) << "scrub never ended";
  EXPECT_GE(r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "uncorrectable"}}), 1);
  EXPECT_GE(r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "found"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "repaired"}}), 0);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_result_info",
                            {{"target", lab.mnt.string()}, {"result", "errors"}, {"started_by", "fsaudit"}}));
}

TEST(ScrubLab, BtrfsScrubStartedByAnAdminIsObservedAndTimed) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  BtrfsLab lab("raid1");
  ASSERT_TRUE(lab.error.empty()) << lab.error;
  // observe_only: fsaudit must not start one itself; the admin does.
  DirectProbe p(lab.dir, std::string(kBtrfsYaml) + "  observe_only: true\n", lab.mnt.string());
  metrics::Labels l{{"target", lab.mnt.string()}, {"fs", "btrfs"}};
  auto r0 = p.run();
  EXPECT_TRUE(r0.metrics.has("fsaudit_scrub_decision_info", {{"target", lab.mnt.string()}, {"mode", "observe_only"}}));
  EXPECT_FALSE(r0.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
  auto c = testing::run({"btrfs", "scrub", "start", "-B", lab.mnt.string()});
  EXPECT_TRUE(c.exit_code == 0 || c.exit_code == 3) << c.err;
  auto r = p.run();
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_result_info", {{"target", lab.mnt.string()}, {"started_by", "other"}}));
  EXPECT_GE(r.metrics.value("fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "repaired"}}), 1);
}

// Online scrub needs the kernel's CONFIG_XFS_ONLINE_SCRUB, which many distribution kernels leave out.
// Whichever this kernel is, fsaudit must say the truth: unsupported where xfs_scrub itself says the
// facility is missing, a scrub that runs and ends where it is there.
TEST(ScrubLab, XfsOnlineScrubReportedAsTheKernelProvidesIt) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("xfs_scrub", "xfsprogs"));
  TempDir dir("fsaudit-scrub-xfs");
  LoopDevice dev(dir.path(), "x.img", 320ull << 20);
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(testing::run({"mkfs.xfs", "-q", "-f", dev.device()}).ok());
  auto mnt = dir / "mnt";
  std::filesystem::create_directories(mnt);
  Mount m(dev.device(), mnt, "xfs");
  ASSERT_TRUE(m.ok()) << m.error();
  // Asked independently of fsaudit: a dry run exits 0 only where the kernel can scrub.
  auto dry = testing::run({"xfs_scrub", "-n", mnt.string()});
  const bool kernel_scrubs = dry.exit_code == 0;
  std::printf("[measure] xfs_scrub -n exit %d: kernel online scrub %s\n", dry.exit_code,
              kernel_scrubs ? "available" : "not available");
  DirectProbe p(dir, "scrub:\n  filesystems: [xfs]\n  spread: 0\n  io_load_threshold: 0\n", mnt.string());
  metrics::Labels l{{"target", mnt.string()}, {"fs", "xfs"}};
  metrics::Labels unsupported{{"target", mnt.string()}, {"mode", "unsupported"}};
  auto r = p.run();
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  // Started (fsaudit cannot know before trying); without kernel support the job ends at once with
  // "facility not available".
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", mnt.string()}, {"code", "start"}}));
  auto settled = [&](const ProbeResult& x) {
    return kernel_scrubs ? x.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l)
                         : x.metrics.has("fsaudit_scrub_decision_info", unsupported);
  };
  for (int i = 0; i < 240 && !settled(r); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    r = p.run();
  }
  EXPECT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  if (!kernel_scrubs) {
    EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", unsupported)) << dry.err;
    auto again = p.run();
    EXPECT_TRUE(again.metrics.has("fsaudit_scrub_decision_info", {{"target", mnt.string()}, {"code", "unsupported"}}));
  } else {
    EXPECT_FALSE(r.metrics.has("fsaudit_scrub_decision_info", unsupported));
    ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l)) << "scrub never ended";
    EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", mnt.string()}, {"result", "ok"}}), 1);
  }
}

// zfs-fuse running, a mirror of two 96 MiB file vdevs, and a scrub config that schedules only that
// pool (any other pool is merely observed).
struct ZfsMirrorLab {
  testing::ZfsFuse zf;
  TempDir dir;
  std::string name;
  std::optional<testing::ZfsPool> pool;
  std::string yaml;
  std::string error;
  explicit ZfsMirrorLab(const std::string& prefix) : dir("fsaudit-" + prefix), name(prefix + std::to_string(::getpid())) {
    if (!zf.ok()) {
      error = zf.error();
      return;
    }
    auto va = dir / "vdev-a.img", vb = dir / "vdev-b.img";
    for (auto& v : {va, vb}) testing::must({"truncate", "-s", std::to_string(96ull << 20), v.string()});
    pool.emplace(name, std::vector<std::string>{"-m", "none", "mirror", va.string(), vb.string()});
    if (!pool->ok()) error = pool->error();
    yaml = "scrub:\n  filesystems: [zfs]\n  spread: 0\n  io_load_threshold: 0\n  targets:\n    - match: " + name +
           "\n      observe_only: false\n    - match: \"*\"\n      observe_only: true\n";
  }
};

TEST(ScrubLab, ZfsFuseMirrorScrubStartedTimedAndReadBack) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsMirrorLab lab("fsscrub");
  ASSERT_TRUE(lab.error.empty()) << lab.error;
  TempDir& dir = lab.dir;
  const std::string& name = lab.name;
  const std::string& yaml = lab.yaml;
  DirectProbe p(dir, yaml, "");
  metrics::Labels l{{"target", name}, {"fs", "zfs"}};
  auto first = p.run();
  ASSERT_EQ(first.outcome, fsaudit::Outcome::ok) << first.reason;
  EXPECT_TRUE(first.metrics.has("fsaudit_scrub_decision_info", {{"target", name}, {"code", "start"}}));
  auto r = p.run_until("fsaudit_scrub_last_end_timestamp_seconds", l, 120);
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l)) << "scrub never ended";
  double start = r.metrics.value("fsaudit_scrub_last_start_timestamp_seconds", l);
  double end = r.metrics.value("fsaudit_scrub_last_end_timestamp_seconds", l);
  double now = SystemClock::instance().wall_seconds();
  EXPECT_GT(start, now - 300);
  EXPECT_GE(end, start - 60);  // zpool prints minutes; our start is to the second
  EXPECT_GE(r.metrics.value("fsaudit_scrub_last_duration_seconds", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_last_errors", {{"target", name}, {"kind", "uncorrectable"}}), 0);
  EXPECT_GT(r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", name}, {"result", "ok"}}), 1);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_result_info", {{"target", name}, {"started_by", "fsaudit"}}));
  // zfs-fuse's zpool has no "scrub -p": pausing falls back to canceling (feature-detected).
  auto sp = testing::run({"zpool", "scrub", "-p", name});
  std::printf("[measure] zfs-fuse: zpool scrub -p exit %d: %s\n", sp.exit_code, sp.err.substr(0, 80).c_str());
}

// The real zpool run by the zfs probe stands for the scrub probe's own `zpool status`, except after the
// scrub probe's own start of a scrub.
struct CountingRunner final : CommandRunner {
  ProcessRunner inner;
  std::mutex mu;
  std::vector<std::vector<std::string>> argvs;
  CommandResult run(const CommandSpec& spec, std::stop_token stop = {}) override {
    {
      std::lock_guard l(mu);
      argvs.push_back(spec.argv);
    }
    return inner.run(spec, stop);
  }
  int count(const std::vector<std::string>& argv_tail) {
    std::lock_guard l(mu);
    int n = 0;
    for (const auto& a : argvs)
      if (a.size() == argv_tail.size() + 1 && std::equal(argv_tail.begin(), argv_tail.end(), a.begin() + 1)) ++n;
    return n;
  }
};

TEST(ScrubLab, ZfsFuseTheZfsProbesStatusStandsForTheScrubProbesOwn) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  ZfsMirrorLab lab("fsshare");
  ASSERT_TRUE(lab.error.empty()) << lab.error;
  TempDir& dir = lab.dir;
  const std::string& name = lab.name;
  auto cfg = config::parse_config(lab.yaml, "lab.yaml");
  auto share = std::make_shared<zfs::StatusShare>();
  zfs::ZfsProbe zfs_probe(share);
  ScrubProbe scrub_probe(cfg.scrub, cfg.targets, "", share);
  CountingRunner runner;
  HostPaths host;
  ToolPaths tools = lab_tools();
  std::filesystem::create_directories(dir / "state");
  auto run = [&](Probe& p) {
    ProbeContext ctx{host, runner, SystemClock::instance(), tools, dir / "state", {},
                     std::chrono::steady_clock::now() + std::chrono::seconds(20)};
    return p.run(Target::host(), ctx);
  };
  ASSERT_EQ(run(zfs_probe).outcome, fsaudit::Outcome::ok);
  const int statuses = runner.count({"status"});
  auto r = run(scrub_probe);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_decision_info", {{"target", name}, {"code", "start"}}));
  EXPECT_EQ(runner.count({"status"}), statuses) << "the scrub probe ran its own zpool status";
  EXPECT_EQ(runner.count({"scrub", name}), 1);
  // Its own start is not in that status: the next pass asks zpool itself.
  r = run(scrub_probe);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(runner.count({"status"}), statuses + 1);
  // A status the zfs probe begins after the start stands for the scrub probe's again.
  ASSERT_EQ(run(zfs_probe).outcome, fsaudit::Outcome::ok);
  const int after = runner.count({"status"});
  r = run(scrub_probe);
  ASSERT_EQ(r.outcome, fsaudit::Outcome::ok) << r.reason;
  EXPECT_EQ(runner.count({"status"}), after);
  EXPECT_TRUE(r.metrics.has("fsaudit_scrub_last_start_timestamp_seconds", {{"target", name}, {"fs", "zfs"}}) ||
              r.metrics.value("fsaudit_scrub_running", {{"target", name}, {"fs", "zfs"}}) == 1)
      << "the started scrub is seen through the zfs probe's status";
  EXPECT_EQ(runner.count({"scrub", name}), 1) << "never a second start";
}

TEST(ScrubLab, DaemonScrapeShowsBtrfsRaid1ScrubResult) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  BtrfsLab lab("raid1");
  ASSERT_TRUE(lab.error.empty()) << lab.error;
  int port = testing::free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (lab.dir / "dstate").string() +
                     "\ntargets:\n  include: [\"" + lab.mnt.string() + "\"]\n" + kBtrfsYaml +
                     // The scrub ends in a second: the next run sees it end (the default is every 30 s).
                     "probes:\n  scrub: {interval: 3s, jitter: 0s}\n";
  testing::DaemonProcess d(lab.dir.path(), yaml, port);
  std::map<std::string, std::string> l{{"target", lab.mnt.string()}, {"fs", "btrfs"}};
  auto text = d.wait_for(
      [&](const std::string& t) {
        return !std::isnan(testing::scrape_value(t, "fsaudit_scrub_last_end_timestamp_seconds", l));
      },
      150);
  ASSERT_FALSE(std::isnan(testing::scrape_value(text, "fsaudit_scrub_last_end_timestamp_seconds", l)))
      << testing::scrape_lines(text, "fsaudit_scrub_decision_info") << "\n" << d.log().substr(0, 3000);
  double found = testing::scrape_value(text, "fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "found"}});
  double repaired =
      testing::scrape_value(text, "fsaudit_scrub_last_errors", {{"target", lab.mnt.string()}, {"kind", "repaired"}});
  EXPECT_GE(found, 1);
  EXPECT_EQ(found, repaired);
  EXPECT_FALSE(std::isnan(testing::scrape_value(text, "fsaudit_scrub_last_duration_seconds", l)));
  EXPECT_EQ(testing::scrape_value(text, "fsaudit_scrub_running", l), 0);
  EXPECT_EQ(d.stop(), 0);
}

}  // namespace
}  // namespace fsaudit::scrub

namespace fsaudit::scrub {
namespace {

// A slow btrfs scrub (scrub_speed_max) against a fake clock: started inside "daily 01:00-02:00",
// paused (btrfs: cancel, position kept) when the window ends, resumed in the next day's window,
// and counted as one completed run.
TEST(ScrubLab, BtrfsWindowEndPausesAndTheNextWindowResumes) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-scrub-window");
  LoopDevice dev(dir.path(), "w.img", 200ull << 20);
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(testing::run({"mkfs.btrfs", "-q", "-f", dev.device()}).ok());
  auto mnt = dir / "mnt";
  std::filesystem::create_directories(mnt);
  Mount m(dev.device(), mnt, "btrfs");
  ASSERT_TRUE(m.ok()) << m.error();
  testing::must({"dd", "if=/dev/urandom", "of=" + (mnt / "data").string(), "bs=1M", "count=48", "status=none"});
  testing::must({"sync"});
  auto uuid = testing::must({"blkid", "-s", "UUID", "-o", "value", dev.device()}).out;
  while (!uuid.empty() && (uuid.back() == '\n' || uuid.back() == ' ')) uuid.pop_back();
  auto limit = "/sys/fs/btrfs/" + uuid + "/devinfo/1/scrub_speed_max";
  FSAUDIT_LAB_NEEDS(testing::lab_path_missing(limit, "btrfs scrub throttling, to make a scrub slow enough to pause (Linux >= 5.14)"));
  testing::write_text(limit, "8m\n");  // ~6 s for 48 MiB

  auto cfg = config::parse_config(
      "scrub:\n  filesystems: [btrfs]\n  spread: 0\n  io_load_threshold: 0\n  window: \"daily 01:00-02:00\"\n"
      "  at_window_end: pause\n",
      "lab.yaml");
  cfg.targets.include = {mnt.string()};
  ScrubProbe probe(cfg.scrub, cfg.targets);
  probe.set_tz_offset(0);
  FakeClock clock{WallTime(std::chrono::seconds(1700266200))};  // wall = Sat 2023-11-18 01:10 UTC
  ProcessRunner runner;
  HostPaths host;
  ToolPaths tools = lab_tools();
  std::filesystem::create_directories(dir / "state");
  auto run = [&] {
    ProbeContext ctx{host, runner, clock, tools, dir / "state", {}, clock.now() + std::chrono::seconds(20)};
    return probe.run(Target::host(), ctx);
  };
  metrics::Labels l{{"target", mnt.string()}, {"fs", "btrfs"}};
  metrics::Labels code{{"target", mnt.string()}};
  auto has_code = [&](const ProbeResult& r, const std::string& c) {
    auto cl = code;
    cl["code"] = c;
    return r.metrics.has("fsaudit_scrub_decision_info", cl);
  };
  auto codes = [&](const ProbeResult& res) {
    std::string d;
    for (const auto& c : {"start", "running", "pause", "paused", "cancel", "resume", "busy", "not_due", "outside_window",
                          "retry_wait", "observe_failed", "degraded", "concurrency", "unsupported"})
      if (has_code(res, c)) d += c;
    return d;
  };
  auto r = run();
  ASSERT_TRUE(has_code(r, "start")) << "expected a start";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  r = run();
  EXPECT_TRUE(has_code(r, "running"));
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 1);
  // The window ends.
  clock.advance(std::chrono::hours(1));
  r = run();
  EXPECT_TRUE(has_code(r, "pause")) << codes(r);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  r = run();
  auto dump = [&] {
    std::string d;
    for (const auto& c : {"start", "running", "pause", "paused", "cancel", "resume", "busy", "not_due", "outside_window", "retry_wait", "observe_failed", "degraded", "concurrency", "unsupported"})
      if (has_code(r, c)) d += std::string("code=") + c + " ";
    auto s = read_file(dir / "state" / "scrub" / ("btrfs_" + [&] {
      std::string k;
      for (char ch : mnt.string()) k += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
      return k;
    }() + ".state"));
    return d + "\n" + (s ? *s : s.error()) + "\n" + testing::run({"btrfs", "scrub", "status", "-R", mnt.string()}).out;
  };
  EXPECT_TRUE(has_code(r, "paused")) << dump();
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_paused", l), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_running", l), 0);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l)) << "a pause is not the end of the run";
  auto st = testing::run({"btrfs", "scrub", "status", mnt.string()});
  EXPECT_NE(st.out.find("aborted"), std::string::npos) << st.out;
  // Next day's window: resumed, then completes.
  clock.advance(std::chrono::hours(23));
  r = run();
  EXPECT_TRUE(has_code(r, "resume"));
  for (int i = 0; i < 120 && !r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    clock.advance(std::chrono::milliseconds(500));
    r = run();
  }
  ASSERT_TRUE(r.metrics.has("fsaudit_scrub_last_end_timestamp_seconds", l));
  EXPECT_EQ(r.metrics.value("fsaudit_scrub_runs_total", {{"target", mnt.string()}, {"result", "ok"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_scrub_runs_total", {{"target", mnt.string()}, {"result", "canceled"}})) << "a result never seen has no series";
  EXPECT_GT(r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l), 40.0 * 1024 * 1024);
  std::printf("[measure] paused+resumed btrfs scrub: duration %.0f s (btrfs' own count), %.0f bytes, rate %.0f B/s\n",
              r.metrics.value("fsaudit_scrub_last_duration_seconds", l),
              r.metrics.value("fsaudit_scrub_last_scrubbed_bytes", l),
              r.metrics.value("fsaudit_scrub_last_rate_bytes_per_second", l));
}

}  // namespace
}  // namespace fsaudit::scrub
