// Lab tests with zfs-fuse (only through the machine-wide testing::ZfsFuse guard) and the real
// fsauditd: a mirror of two file vdevs, one side corrupted where our data lies, scrubbed; the
// probe (and the daemon's scrape) must show that vdev's checksum counter rising while the pool
// stays ONLINE and the data reads back intact. Plus a hung `zpool` in a running daemon.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "daemon/core/clock.hpp"
#include "probes/zfs/probe.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::zfs {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr std::uint64_t kVdevSize = 96ull << 20;  // zfs-fuse wants >= 64 MiB per vdev
constexpr std::size_t kBlock = 4096;
constexpr std::size_t kBlocks = 2048;              // 8 MiB of data

ProbeResult run_probe(ZfsProbe& probe) {
  ProcessRunner runner;
  HostPaths host;
  SystemClock clock;
  ToolPaths tools;
  std::stop_source stop;
  ProbeContext ctx{host, runner, clock, tools, fs::temp_directory_path(), stop.get_token(), clock.now() + 30s};
  return probe.run(Target::host(), ctx);
}

// Writes kBlocks unique 4 KiB blocks: "FSAUDITZFSLAB:<nonce>:<index>:" then pseudo-random bytes.
std::string make_data(const std::string& nonce) {
  std::mt19937_64 rng(std::hash<std::string>{}(nonce));
  std::string data(kBlocks * kBlock, '\0');
  for (std::size_t i = 0; i < kBlocks; ++i) {
    char* b = data.data() + i * kBlock;
    for (std::size_t k = 0; k < kBlock; k += 8) {
      auto v = rng();
      std::memcpy(b + k, &v, 8);
    }
    std::string tag = "FSAUDITZFSLAB:" + nonce + ":" + std::to_string(i) + ":";
    std::memcpy(b, tag.data(), tag.size());
  }
  return data;
}

// Offsets in the vdev file where our blocks' tags are, outside the first and last 4 MiB (labels).
std::vector<std::uint64_t> find_blocks(const fs::path& vdev, const std::string& nonce) {
  std::ifstream f(vdev, std::ios::binary);
  std::string img((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string needle = "FSAUDITZFSLAB:" + nonce + ":";
  std::vector<std::uint64_t> out;
  for (auto pos = img.find(needle, 4 << 20); pos != std::string::npos && pos < img.size() - (4 << 20);
       pos = img.find(needle, pos + 1))
    out.push_back(pos);
  return out;
}

bool overwrite(const fs::path& p, std::uint64_t off, std::size_t len) {
  int fd = ::open(p.c_str(), O_WRONLY);
  if (fd < 0) return false;
  std::string junk(len, '\x5a');
  bool ok = ::pwrite(fd, junk.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len);
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  return ok;
}

void wait_scrub_done(const std::string& pool) {
  for (int i = 0; i < 600; ++i) {
    auto st = testing::run({"zpool", "status", pool});
    if (st.out.find("in progress") == std::string::npos) return;
    std::this_thread::sleep_for(100ms);
  }
  ADD_FAILURE() << "scrub of " << pool << " did not finish in 60 s";
}

// A vdev's checksum counter; by default one at 0 is no series (zfs.detail: compact), so 0 for a vdev
// that is there (its state series) without one, NaN for a vdev that is not.
double vdev_ck(const metrics::Batch& b, const std::string& pool, const std::string& vdev) {
  if (!b.has("fsaudit_zfs_vdev_state", {{"pool", pool}, {"vdev", vdev}})) return std::nan("");
  const metrics::Labels l{{"pool", pool}, {"vdev", vdev}, {"kind", "checksum"}};
  return b.has("fsaudit_zfs_vdev_errors", l) ? b.value("fsaudit_zfs_vdev_errors", l) : 0;
}

struct Lab {
  testing::TempDir dir{"fsaudit-zfs-lab"};
  fs::path a = dir / "vdev-a.img", b = dir / "vdev-b.img", mnt = dir / "mnt";
  std::string pool = "fsauditzfs" + std::to_string(::getpid());
  Lab() {
    for (auto& p : {a, b}) testing::must({"truncate", "-s", std::to_string(kVdevSize), p.string()});
    fs::create_directories(mnt);
  }
};

TEST(ZfsLab, CorruptOneMirrorSideChecksumRisesPoolStaysOnline) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  testing::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  Lab lab;
  testing::ZfsPool pool(lab.pool, {"mirror", lab.a.string(), lab.b.string()});
  ASSERT_TRUE(pool.ok()) << pool.error();
  testing::must({"zfs", "set", "mountpoint=" + lab.mnt.string(), lab.pool});

  ZfsProbe probe;
  auto before = run_probe(probe);
  ASSERT_EQ(before.outcome, Outcome::ok) << before.reason;
  EXPECT_EQ(probe.detected_format(), StatusFormat::text);  // zfs-fuse rejects -j and -p
  EXPECT_EQ(vdev_ck(before.metrics, lab.pool, lab.b.string()), 0);
  EXPECT_EQ(before.metrics.value("fsaudit_zfs_pool_state", {{"pool", lab.pool}, {"state", "online"}}), 1);
  EXPECT_FALSE(before.metrics.has("fsaudit_zfs_pool_redundant"));  // the stack model says it:
  EXPECT_GE(before.metrics.value("fsaudit_redundancy_designed", {{"target", lab.pool}, {"fs", "zfs"}}), 1);
  EXPECT_EQ(before.metrics.value("fsaudit_zfs_scan_state", {{"pool", lab.pool}, {"state", "none"}}), 1);
  EXPECT_GT(before.metrics.value("fsaudit_zfs_pool_size_bytes", {{"pool", lab.pool}}), 64.0 * (1 << 20));

  const std::string nonce = std::to_string(std::random_device{}());
  const std::string data = make_data(nonce);
  const fs::path file = lab.mnt / "canary.bin";
  testing::write_text(file, data);
  testing::must({"sync"});
  const std::string want = testing::digest_file(file);

  // Export so nothing is cached and the vdev files are quiescent, then corrupt side B where our
  // blocks are (found by their tag), never the labels.
  testing::must({"zpool", "export", lab.pool});
  auto hits = find_blocks(lab.b, nonce);
  ASSERT_GE(hits.size(), kBlocks / 2) << "our data blocks were not found in " << lab.b;
  std::size_t corrupted = 0;
  for (std::size_t i = 0; i < hits.size(); i += 64) {  // one block in every 64 (about 16 records)
    ASSERT_TRUE(overwrite(lab.b, hits[i], kBlock));
    ++corrupted;
  }
  testing::must({"zpool", "import", "-d", lab.dir.path().string(), lab.pool});
  testing::must({"zpool", "scrub", lab.pool});
  wait_scrub_done(lab.pool);

  auto t0 = std::chrono::steady_clock::now();
  auto after = run_probe(probe);
  auto run_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(after.outcome, Outcome::ok) << after.reason;
  double ck_b = vdev_ck(after.metrics, lab.pool, lab.b.string());
  std::cout << "[measure] corrupted " << corrupted << " of " << hits.size() << " located 4 KiB blocks; checksum errors on "
            << lab.b.filename() << ": " << ck_b << "; cached-format probe run " << run_ms << " ms\n";
  EXPECT_GT(ck_b, 0) << "corrupted " << corrupted << " blocks of " << lab.b;
  // Each corrupted block lies in a different 128 KiB record: each must have been counted.
  EXPECT_GE(ck_b, static_cast<double>(corrupted));
  EXPECT_EQ(vdev_ck(after.metrics, lab.pool, lab.a.string()), 0);
  EXPECT_EQ(after.metrics.value("fsaudit_zfs_pool_state", {{"pool", lab.pool}, {"state", "online"}}), 1);
  EXPECT_EQ(after.metrics.value("fsaudit_zfs_vdev_state", {{"pool", lab.pool}, {"vdev", lab.b.string()}, {"state", "online"}}), 1);
  EXPECT_EQ(after.metrics.value("fsaudit_zfs_scan_state", {{"pool", lab.pool}, {"state", "finished"}}), 1);
  EXPECT_EQ(after.metrics.value("fsaudit_zfs_scan_function", {{"pool", lab.pool}, {"state", "scrub"}}), 1);
  EXPECT_EQ(after.metrics.value("fsaudit_zfs_scan_errors", {{"pool", lab.pool}}), 0);
  EXPECT_EQ(after.metrics.value("fsaudit_zfs_pool_data_errors", {{"pool", lab.pool}}), 0);
  auto end = after.metrics.value("fsaudit_zfs_last_scrub_end_timestamp_seconds", {{"pool", lab.pool}});
  auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(end, now, 120);  // zpool prints local time; read back as local time
  EXPECT_EQ(testing::digest_file(file), want) << "the mirror must have served and repaired the good copy";
}

std::string yaml_for(int port, const fs::path& state, const std::string& zpool) {
  return "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + state.string() +
         "\ntools:\n  zpool: " + zpool +
         "\nprobes:\n  zfs: {enabled: true, interval: 1s, jitter: 0s, timeout: 3s}\n"
         "  capacity: {enabled: true, interval: 1s, jitter: 0s, timeout: 5s}\n";
}

// A pool whose devices are gone when ZFS starts (a disk shelf off at boot): zfs-fuse imports it from
// its cache as UNAVAIL, and `zpool status` prints its tree with no "errors:" line (its error count is
// unknown), last in the output when its name sorts last. The probe reports it and the other pool, and
// succeeds; it used to fail as "cut short", blind to every pool exactly then.
TEST(ZfsLab, PoolWhoseDeviceIsGoneAtStartIsReportedUnavail) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  testing::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  FSAUDIT_LAB_NEEDS(zf.owned() ? std::optional<std::string>()
                               : std::optional<std::string>("a zfs-fuse of its own to restart (another one is running)"));
  testing::TempDir dir("fsaudit-zfs-unavail");
  const auto id = std::to_string(::getpid());
  const fs::path keep_img = dir / "keep.img", gone_img = dir / "gone.img";
  for (auto& p : {keep_img, gone_img}) testing::must({"truncate", "-s", std::to_string(kVdevSize), p.string()});
  const std::string keep = "fsauditkeep" + id, gone = "fsauditzzgone" + id;  // gone sorts after keep
  testing::ZfsPool keep_pool(keep, {keep_img.string()});
  ASSERT_TRUE(keep_pool.ok()) << keep_pool.error();
  testing::ZfsPool gone_pool(gone, {gone_img.string()});
  ASSERT_TRUE(gone_pool.ok()) << gone_pool.error();
  for (const auto& p : {keep, gone}) testing::must({"zfs", "set", "mountpoint=none", p});

  ASSERT_TRUE(zf.restart([&] { fs::rename(gone_img, dir / "moved-away.img"); })) << zf.error();
  auto own = testing::run({"zpool", "status", gone}, 60);
  ASSERT_NE(own.out.find("UNAVAIL"), std::string::npos) << own.out << own.err;
  EXPECT_EQ(own.out.find("errors:"), std::string::npos) << "zfs-fuse printed an errors: line after all:\n" << own.out;

  ZfsProbe probe;
  auto r = run_probe(probe);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_zfs_pool_state", {{"pool", gone}, {"state", "unavail"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_zfs_pool_state", {{"pool", keep}, {"state", "online"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_zfs_vdev_state", {{"pool", gone}, {"vdev", gone_img.string()}, {"state", "unavail"}}), 1);
  EXPECT_FALSE(r.metrics.has("fsaudit_zfs_pool_data_errors", {{"pool", gone}})) << "unknown, not 0";
  EXPECT_EQ(r.metrics.value("fsaudit_zfs_pool_data_errors", {{"pool", keep}}), 0);
}

TEST(ZfsLab, DaemonScrapeShowsCksumOnCorruptedVdev) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  testing::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  Lab lab;
  testing::ZfsPool pool(lab.pool, {"mirror", lab.a.string(), lab.b.string()});
  ASSERT_TRUE(pool.ok()) << pool.error();
  testing::must({"zfs", "set", "mountpoint=" + lab.mnt.string(), lab.pool});
  const std::string nonce = std::to_string(std::random_device{}());
  testing::write_text(lab.mnt / "canary.bin", make_data(nonce));
  testing::must({"sync"});
  testing::must({"zpool", "export", lab.pool});
  auto hits = find_blocks(lab.b, nonce);
  ASSERT_GE(hits.size(), kBlocks / 2);
  for (std::size_t i = 0; i < hits.size(); i += 64) ASSERT_TRUE(overwrite(lab.b, hits[i], kBlock));
  testing::must({"zpool", "import", "-d", lab.dir.path().string(), lab.pool});

  testing::TempDir state("fsaudit-zfs-daemon");
  int port = testing::free_port();
  testing::DaemonProcess d(state.path(), yaml_for(port, state / "state", "zpool"), port);
  const std::map<std::string, std::string> ck = {{"pool", lab.pool}, {"vdev", lab.b.string()}, {"kind", "checksum"}};
  // The vdev is watched (its state) and its checksum counter still 0: no series for it by default.
  auto text = d.wait_for_metric("fsaudit_zfs_vdev_state", {{"pool", lab.pool}, {"vdev", lab.b.string()}}, 60);
  ASSERT_FALSE(std::isnan(testing::scrape_value(text, "fsaudit_zfs_vdev_state", {{"pool", lab.pool}, {"vdev", lab.b.string()}})))
      << d.log();
  EXPECT_TRUE(std::isnan(testing::scrape_value(text, "fsaudit_zfs_vdev_errors", ck))) << testing::scrape_lines(text, "fsaudit_zfs_vdev_errors");
  testing::must({"zpool", "scrub", lab.pool});
  wait_scrub_done(lab.pool);
  text = d.wait_for([&](const std::string& t) { return testing::scrape_value(t, "fsaudit_zfs_vdev_errors", ck) > 0; }, 30);
  EXPECT_GT(testing::scrape_value(text, "fsaudit_zfs_vdev_errors", ck), 0) << testing::scrape_lines(text, "fsaudit_zfs_vdev_errors");
  EXPECT_EQ(testing::scrape_value(text, "fsaudit_zfs_pool_state", {{"pool", lab.pool}, {"state", "online"}}), 1);
  EXPECT_EQ(testing::scrape_value(text, "fsaudit_probe_success", {{"probe", "zfs"}}), 1);
  EXPECT_EQ(d.stop(), 0) << d.log();
}

TEST(ZfsLab, DaemonHungZpoolTimesOutOthersKeepUpdating) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();  // no zfs-fuse needed: the fake zpool never answers
  testing::TempDir dir("fsaudit-zfs-hung");
  auto fake = dir / "zpool";
  testing::write_text(fake, "#!/bin/sh\nexec sleep 100000\n");
  fs::permissions(fake, fs::perms::owner_all);
  int port = testing::free_port();
  testing::DaemonProcess d(dir.path(), yaml_for(port, dir / "state", fake.string()), port);
  const std::map<std::string, std::string> zfs = {{"probe", "zfs"}};
  auto text = d.wait_for([&](const std::string& t) {
    return testing::scrape_value(t, "fsaudit_probe_failures_total", zfs) >= 1;
  }, 30);
  ASSERT_GE(testing::scrape_value(text, "fsaudit_probe_failures_total", zfs), 1) << d.log();
  EXPECT_EQ(testing::scrape_value(text, "fsaudit_probe_success", zfs), 0);
  auto reasons = testing::scrape_lines(text, "fsaudit_probe_failure_info");
  EXPECT_NE(reasons.find("timed out"), std::string::npos) << reasons;
  // The capacity probe keeps running while zpool hangs: its last-run time advances.
  const std::map<std::string, std::string> cap = {{"probe", "capacity"}};
  double t1 = testing::scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", cap);
  ASSERT_FALSE(std::isnan(t1)) << testing::scrape_lines(text, "fsaudit_probe_last_run_timestamp_seconds");
  text = d.wait_for([&](const std::string& t) {
    return testing::scrape_value(t, "fsaudit_probe_last_run_timestamp_seconds", cap) > t1 + 1.5;
  }, 15);
  EXPECT_GT(testing::scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", cap), t1 + 1.5);
  // ... and the zfs probe is retried on its schedule (timeout 3s + interval 1s), failing again.
  text = d.wait_for([&](const std::string& t) {
    return testing::scrape_value(t, "fsaudit_probe_failures_total", zfs) >= 2;
  }, 20);
  EXPECT_GE(testing::scrape_value(text, "fsaudit_probe_failures_total", zfs), 2);
  EXPECT_EQ(d.stop(), 0) << d.log();
  // No fake zpool (sleep) left behind: the runner killed its process group.
  auto ps = testing::run({"pgrep", "-f", fake.string()});
  EXPECT_NE(ps.exit_code, 0) << ps.out;
}

}  // namespace
}  // namespace fsaudit::zfs
