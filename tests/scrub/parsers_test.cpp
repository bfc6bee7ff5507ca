// Parser tests on fixtures written from the tools' documented formats (tests/fixtures/written) and
// captures made here: OpenZFS scan lines (through the ZFS helper's parse_zfs_scan), btrfs
// `scrub status -R` and /var/lib/btrfs/scrub.status.UUID (through the btrfs helper's parser),
// xfs_scrub outputs, and the bcachefs table parser on text built from the documented format.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "daemon/core/files.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/bcachefs/scrub_output.hpp"
#include "probes/btrfs/scrub_driver.hpp"
#include "probes/md/scrub_output.hpp"
#include "probes/scrub/parsers.hpp"
#include "probes/xfs/scrub_output.hpp"
#include "probes/zfs/scrub_driver.hpp"
#include "probes/zfs/status.hpp"
#include "probes/scrub/timers.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::scrub {
namespace {

using testing::fixture;
using namespace fsaudit::bcachefs;
using btrfs::observation_from_btrfs_file;
using md::parse_md_sync_completed;
using xfs::parse_xfs_scrub;

// Every ZFS case must parse: unrecognised text is an error, never an empty observation.
Observation observation_from_zpool_status(std::string_view text) {
  auto o = zfs::observation_from_zpool_status(text);
  EXPECT_TRUE(o.ok()) << (o ? "" : o.error());
  return o ? *o : Observation{};
}

class Utc : public ::testing::Environment {
 public:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
};
[[maybe_unused]] auto* const utc_env = ::testing::AddGlobalTestEnvironment(new Utc);

// ---- ZFS --------------------------------------------------------------------------------------
TEST(ScrubZfs, InProgressFreeBsd) {
  auto o = observation_from_zpool_status(fixture("written/zfs/zpool-status-openzfs-scrub-in-progress-scanned-issued-total.txt"));
  EXPECT_EQ(o.phase, Phase::running);
  ASSERT_TRUE(o.progress);
  EXPECT_NEAR(*o.progress, 0.1718, 1e-6);
  ASSERT_TRUE(o.started);
  EXPECT_DOUBLE_EQ(*o.started, 1673714331);  // Sat Jan 14 16:38:51 2023 UTC
  ASSERT_TRUE(o.bytes);
  EXPECT_NEAR(*o.bytes, 512.0 * 1024 * 1024, 1024 * 1024);  // issued
  ASSERT_TRUE(o.rate);
  EXPECT_NEAR(*o.rate, 73.1 * 1024 * 1024, 1024 * 1024);
  EXPECT_FALSE(o.degraded);
}

TEST(ScrubZfs, InProgressNoEtaOnDegradedPool) {
  auto o = observation_from_zpool_status(
      fixture("written/zfs/zpool-status-openzfs-degraded-raidz2-scrub-no-eta-logs-trailing-tab-cache.txt"));
  EXPECT_EQ(o.phase, Phase::running);
  EXPECT_TRUE(o.degraded);
  ASSERT_TRUE(o.progress);
  EXPECT_NEAR(*o.progress, 0.2276, 1e-6);
}

TEST(ScrubZfs, RepairedWithZeroErrors) {
  auto o = observation_from_zpool_status(
      fixture("written/zfs/zpool-status-openzfs-scrub-repaired-11.2M-cksum-94-ZFS-8000-9P.txt"));
  EXPECT_EQ(o.phase, Phase::idle);
  EXPECT_EQ(o.last_outcome, Outcome::finished);
  ASSERT_TRUE(o.last_duration);
  EXPECT_DOUBLE_EQ(*o.last_duration, 48);
  ASSERT_TRUE(o.last_end);
  EXPECT_DOUBLE_EQ(*o.last_end, 1673714412);  // Sat Jan 14 16:40:12 2023
  ASSERT_TRUE(o.started);
  EXPECT_DOUBLE_EQ(*o.started, 1673714412 - 48);
  ASSERT_TRUE(o.repaired_bytes);
  EXPECT_NEAR(*o.repaired_bytes, 11.2 * 1024 * 1024, 0.1 * 1024 * 1024);
  EXPECT_EQ(o.errors.uncorrectable, 0u);
  EXPECT_FALSE(o.errors.found) << "bytes were repaired but zpool prints no count";
}

TEST(ScrubZfs, LegacyWordingWithErrors) {
  auto o = observation_from_zpool_status(
      fixture("written/zfs/zpool-status-v-zol-0.6-scrub-1212-errors-cksum-1.17K-2.34K-list-cut.txt"));
  EXPECT_EQ(o.last_outcome, Outcome::finished);
  EXPECT_EQ(o.errors.uncorrectable, 1212u);
  EXPECT_EQ(o.errors.found, 1212u);  // "repaired 0": everything found was left unrepaired
  EXPECT_EQ(o.errors.repaired, 0u);
  ASSERT_TRUE(o.last_duration);
  EXPECT_DOUBLE_EQ(*o.last_duration, 5 * 3600 + 12 * 60);
}

TEST(ScrubZfs, Canceled) {
  auto o = observation_from_zpool_status(fixture("written/zfs/zpool-status-v-openzfs-macos-three-pools-scrub-canceled-no-blank-lines.txt"));
  EXPECT_EQ(o.phase, Phase::idle);
  EXPECT_EQ(o.last_outcome, Outcome::canceled);
  ASSERT_TRUE(o.last_end);
  EXPECT_DOUBLE_EQ(*o.last_end, 1662671676);  // Thu Sep  8 21:14:36 2022
}

TEST(ScrubZfs, ResilverIsNotAScrubButBlocksStarting) {
  auto done = observation_from_zpool_status(fixture("written/zfs/zpool-status-openzfs-resilvered-612K.txt"));
  EXPECT_EQ(done.last_outcome, Outcome::none);
  EXPECT_FALSE(done.resilvering);
  auto running = observation_from_zpool_status(fixture("written/zfs/zpool-status-openzfs-resilver-in-progress-replacing-offline-old-days-to-go.txt"));
  EXPECT_TRUE(running.resilvering);
  EXPECT_EQ(running.phase, Phase::idle);
}

TEST(ScrubZfs, NeverScrubbed) {
  auto o = observation_from_zpool_status(fixture("written/zfs/zpool-status-zol-0.7-two-pools-file-vdevs-scan-none-requested.txt"));
  EXPECT_EQ(o.phase, Phase::idle);
  EXPECT_EQ(o.last_outcome, Outcome::none);
  EXPECT_FALSE(o.degraded);
}

TEST(ScrubZfs, ReadsOnlyTheScanBlock) {
  auto rep = zfs::parse_zpool_status(fixture("written/zfs/zpool-status-openzfs-scrub-in-progress-scanned-issued-total.txt"));
  ASSERT_TRUE(rep.ok() && !rep->pools.empty());
  const auto& b = rep->pools.front().scan.text;
  EXPECT_EQ(observation_from_zpool_status(fixture("written/zfs/zpool-status-openzfs-scrub-in-progress-scanned-issued-total.txt")).detail, b);
  EXPECT_NE(b.find("scrub in progress since"), std::string::npos);
  EXPECT_NE(b.find("17.18% done"), std::string::npos);
  EXPECT_EQ(b.find("NAME"), std::string::npos);
}

// ---- btrfs ------------------------------------------------------------------------------------
Observation btrfs_obs(const std::string& name) {
  auto p = btrfs::parse_scrub_status(fixture(name));
  EXPECT_TRUE(p.ok()) << (p ? "" : p.error());
  return p ? btrfs::observation_from_btrfs(*p) : Observation{};
}

TEST(ScrubBtrfs, StatusRawFinished) {
  auto o = btrfs_obs("written/btrfs/scrub-status-R-finished-raw.txt");
  EXPECT_EQ(o.phase, Phase::idle);
  EXPECT_EQ(o.last_outcome, Outcome::finished);
  ASSERT_TRUE(o.last_duration);
  EXPECT_DOUBLE_EQ(*o.last_duration, 7 * 3600 + 48 * 60 + 5);
  ASSERT_TRUE(o.started && o.last_end);
  EXPECT_DOUBLE_EQ(*o.last_end - *o.started, *o.last_duration);
  ASSERT_TRUE(o.bytes);
  EXPECT_DOUBLE_EQ(*o.bytes, 8734421925888.0 + 14323105792.0);
  EXPECT_EQ(o.errors.found, 0u);
  EXPECT_EQ(o.errors.repaired, 0u);
  EXPECT_EQ(o.errors.uncorrectable, 0u);
}

TEST(ScrubBtrfs, FinishedWithCorrectedAndUncorrectable) {
  auto o = btrfs_obs("written/btrfs/scrub-status-finished-csum-2417-corrected-305-uncorrectable-2112.txt");
  EXPECT_EQ(o.last_outcome, Outcome::finished);
  EXPECT_EQ(o.errors.found, 2417u);
  EXPECT_EQ(o.errors.repaired, 305u);
  EXPECT_EQ(o.errors.uncorrectable, 2112u);
}

TEST(ScrubBtrfs, RunningHasProgress) {
  auto o = btrfs_obs("written/btrfs/scrub-status-running-large-fs-progs-6.17.txt");
  EXPECT_EQ(o.phase, Phase::running);
  ASSERT_TRUE(o.progress);
  EXPECT_GT(*o.progress, 0);
  EXPECT_LT(*o.progress, 1);
}

TEST(ScrubBtrfs, AbortedRawIsCanceled) {
  auto o = btrfs_obs("written/btrfs/scrub-start-BR-aborted-raw.txt");
  EXPECT_EQ(o.last_outcome, Outcome::canceled);
}

TEST(ScrubBtrfs, StatusFileOfTheLastScrub) {
  auto f = btrfs::parse_scrub_status_file(fixture("written/btrfs/scrub-status-file-aborted-record.txt"));
  ASSERT_TRUE(f.ok());
  auto o = observation_from_btrfs_file(*f, "6a0d4f83-1e92-47c5-b3a8-c5f27e90d416");
  ASSERT_TRUE(o.started);
  EXPECT_DOUBLE_EQ(*o.started, 1712907930);
  EXPECT_EQ(o.last_outcome, Outcome::canceled);  // canceled:1 (and finished:1)
  ASSERT_TRUE(o.last_end);
  EXPECT_DOUBLE_EQ(*o.last_end, 1712907930 + 31);
  ASSERT_TRUE(o.bytes);
  EXPECT_DOUBLE_EQ(*o.bytes, 61253091328.0 + 1314258944.0);
  EXPECT_EQ(o.errors.found, 0u);
  // Another filesystem's UUID: nothing.
  auto none = observation_from_btrfs_file(*f, "00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(none.last_outcome, Outcome::none);
}

// ---- xfs_scrub --------------------------------------------------------------------------------
TEST(ScrubXfs, CorruptionsFoundDryRun) {
  auto r = parse_xfs_scrub(fixture("written/xfs/xfs_scrub-n-v-corruptions-found-summary.txt"));
  EXPECT_EQ(r.corruption_lines, 2u);
  EXPECT_EQ(r.corruptions_found, 2u);
  EXPECT_EQ(r.uncorrectable(), 2u);
  EXPECT_EQ(r.found(), 2u);
  ASSERT_TRUE(r.data_found_bytes);
  EXPECT_NEAR(*r.data_found_bytes, 97.6 * 1024 * 1024, 0.1 * 1024 * 1024);
  EXPECT_FALSE(r.kernel_unsupported);
}

TEST(ScrubXfs, WrappedDebugOutput) {
  auto r = parse_xfs_scrub(fixture("written/xfs/xfs_scrub-v-d-n-corruption-debug-line-numbers-wrapped.txt"));
  EXPECT_EQ(r.corruption_lines, 1u);
  EXPECT_EQ(r.corruptions_found, 1u);
  EXPECT_GE(r.optimization_lines, 17u);
  ASSERT_TRUE(r.data_found_bytes);
  EXPECT_NEAR(*r.data_found_bytes, 2.4 * 1024 * 1024 * 1024, 0.06 * 1024 * 1024 * 1024);
}

TEST(ScrubXfs, OptimizationOnlyWithDecimalComma) {
  auto r = parse_xfs_scrub(fixture("written/xfs/xfs_scrub-v-optimizations-decimal-comma.txt"));
  EXPECT_EQ(r.uncorrectable(), 0u);
  EXPECT_EQ(r.optimization_lines, 4u);
  ASSERT_TRUE(r.data_found_bytes);
  EXPECT_NEAR(*r.data_found_bytes, 127.9 * 1024 * 1024 * 1024, 0.06 * 1024 * 1024 * 1024);
}

TEST(ScrubXfs, MediaErrorsUnfixable) {
  auto r = parse_xfs_scrub(fixture("written/xfs/xfs_scrub-x-media-errors-unfixable-repeated-runs.txt"));
  EXPECT_EQ(r.unfixable_lines, 3u);
  EXPECT_EQ(r.unfixable_found, 2u);  // each run prints its own summary; the last one counts
  EXPECT_EQ(r.uncorrectable(), 2u);
}

std::string local(const std::string& name) {
  auto r = read_file(std::string(FSAUDIT_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(r.ok()) << (r ? "" : r.error());
  return r ? *r : "";
}

TEST(ScrubXfs, KernelWithoutOnlineScrubCapturedHere) {
  for (const char* f : {"scrub/xfs_scrub-b-kernel-without-online-scrub-6.18.txt",
                        "scrub/xfs_scrub-n-v-kernel-without-online-scrub-6.18.txt"}) {
    auto r = parse_xfs_scrub(local(f));
    EXPECT_TRUE(r.kernel_unsupported) << f;
    EXPECT_EQ(r.operational_errors, 1u) << f;
    EXPECT_EQ(r.uncorrectable(), 0u) << f;
  }
}

TEST(ScrubBtrfs, CapturedHereRaid1CorrectedAndSingleUncorrectable) {
  for (const char* f : {"scrub/btrfs-scrub-start-BR-raid1-corrected-progs-6.2.txt",
                        "scrub/btrfs-scrub-status-R-raid1-corrected-progs-6.2.txt"}) {
    auto p = btrfs::parse_scrub_status(local(f));
    ASSERT_TRUE(p.ok()) << f;
    auto o = btrfs::observation_from_btrfs(*p);
    EXPECT_EQ(o.last_outcome, Outcome::finished) << f;
    EXPECT_EQ(o.errors.found, 1u) << f;
    EXPECT_EQ(o.errors.repaired, 1u) << f;
    EXPECT_EQ(o.errors.uncorrectable, 0u) << f;
    EXPECT_EQ(o.bytes, 253952.0 + 294912.0) << f;
  }
  for (const char* f : {"scrub/btrfs-scrub-start-BR-single-uncorrectable-progs-6.2.txt",
                        "scrub/btrfs-scrub-status-R-single-uncorrectable-progs-6.2.txt"}) {
    auto p = btrfs::parse_scrub_status(local(f));
    ASSERT_TRUE(p.ok()) << f;
    auto o = btrfs::observation_from_btrfs(*p);
    EXPECT_EQ(o.errors.uncorrectable, 1u) << f;
    EXPECT_EQ(o.errors.repaired, 0u) << f;
  }
}

TEST(ScrubZfs, ZfsFuseCompletedWording) {
  auto o = observation_from_zpool_status(local("zfs/zfs-fuse-status-scrub-completed-clean-96M.txt"));
  EXPECT_EQ(o.last_outcome, Outcome::finished);
  EXPECT_EQ(o.errors.uncorrectable, 0u);
  ASSERT_TRUE(o.last_duration);
  EXPECT_DOUBLE_EQ(*o.last_duration, 0);
  ASSERT_TRUE(o.last_end);
  EXPECT_DOUBLE_EQ(*o.last_end, 1795996520);  // Sun Nov 29 23:55:20 2026 UTC
  auto never = observation_from_zpool_status(local("zfs/zfs-fuse-status-healthy-mirror-never-scrubbed-96M.txt"));
  EXPECT_EQ(never.last_outcome, Outcome::none);
  EXPECT_EQ(never.phase, Phase::idle);
}

// ---- bcachefs (no captured sample exists: built from the table format cmd_scrub prints) ---------
TEST(ScrubBcachefs, FinalTableTwoDevices) {
  std::string text =
      "Starting scrub on 2 devices: sda sdb\n"
      "device          checked   corrected uncorrected       total\n"
      "sda              1.00 GiB       0 B         0 B    1.00 GiB 100%  complete\n"
      "sdb              1.00 GiB    8.00 KiB     4.00 KiB    1.00 GiB 100%  complete\n";
  auto r = parse_bcachefs_scrub(text);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[1].name, "sdb");
  EXPECT_DOUBLE_EQ(r->checked_bytes(), 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(r->corrected_bytes(), 8192);
  EXPECT_DOUBLE_EQ(r->uncorrected_bytes(), 4096);
  EXPECT_TRUE(r->complete());
}

TEST(ScrubBcachefs, RedrawnInPlaceLastRowWins) {
  // As captured to a file: each second the rows are redrawn with "\033[1A" and "\33[2K\r".
  std::string text =
      "Starting scrub on 1 devices:  nvme0n1\n"
      "device          checked   corrected uncorrected       total\n"
      "nvme0n1        100.0M          0B          0B        1.0G  9%  100.0M/sec"
      "\33[2K\r"
      "nvme0n1        600.0M          0B          0B        1.0G 58%  500.0M/sec"
      "\33[2K\r"
      "nvme0n1          1.0G          0B        512B        1.0G 100%  complete\n";
  auto r = parse_bcachefs_scrub(text);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].percent, 100);
  EXPECT_EQ(r->devices[0].state, "complete");
  EXPECT_DOUBLE_EQ(r->uncorrected_bytes(), 512);
  auto running = parse_bcachefs_scrub(text.substr(0, text.find("\33[2K\r")));
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->devices[0].state, "running");
  ASSERT_TRUE(running->devices[0].rate_bytes_per_second);
  EXPECT_DOUBLE_EQ(*running->devices[0].rate_bytes_per_second, 100.0 * 1024 * 1024);
  EXPECT_FALSE(running->complete());
}

TEST(ScrubBcachefs, OfflineDeviceAndGarbage) {
  auto r = parse_bcachefs_scrub(
      "device checked corrected uncorrected total\n(offline) 0B 0B 0B 2.0G 0% offline\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->devices[0].state, "offline");
  EXPECT_FALSE(r->complete());
  EXPECT_FALSE(parse_bcachefs_scrub("bcachefs: unknown command scrub\n").ok());
}

TEST(ScrubBcachefs, Version) {
  EXPECT_EQ(parse_bcachefs_version("1.33.0\n"), std::make_pair(1, 33));
  EXPECT_EQ(parse_bcachefs_version("bcachefs tool version v1.9.1-gabcdef"), std::make_pair(1, 9));
  EXPECT_FALSE(parse_bcachefs_version("garbage"));
}

// ---- md, load, timers ---------------------------------------------------------------------------
TEST(ScrubMd, SyncCompleted) {
  auto sc = parse_md_sync_completed("1024 / 4096\n");
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->first, 1024u);
  EXPECT_EQ(sc->second, 4096u);
  EXPECT_FALSE(parse_md_sync_completed("none\n"));
}

TEST(ScrubLoad, PressureAndDiskstats) {
  EXPECT_EQ(parse_pressure_some_avg10("some avg10=12.50 avg60=3.00 avg300=1.00 total=123\n"
                                      "full avg10=10.00 avg60=2.00 avg300=1.00 total=100\n"),
            12.5);
  EXPECT_FALSE(parse_pressure_some_avg10("garbage"));
  std::string a = "   8       0 sda 100 0 800 50 10 0 80 5 0 1000 55 0 0 0 0\n   7 0 loop0 1 0 2 0 0 0 0 0 0 10 0\n";
  std::string b = "   8       0 sda 200 0 1600 90 20 0 160 9 0 1600 99 0 0 0 0\n   7 0 loop0 1 0 2 0 0 0 0 0 0 10 0\n";
  auto ta = parse_diskstats_io_ticks(a), tb = parse_diskstats_io_ticks(b);
  EXPECT_EQ(ta.at("sda"), 1000u);
  auto u = diskstats_utilisation(ta, tb, 2000);  // 600 ms busy in 2 s
  ASSERT_TRUE(u);
  EXPECT_DOUBLE_EQ(*u, 30);
  EXPECT_FALSE(diskstats_utilisation({}, tb, 2000)) << "first sample: unknown";
}

TEST(ScrubTimers, EscapeAndDetection) {
  EXPECT_EQ(systemd_escape_path("/"), "-");
  EXPECT_EQ(systemd_escape_path("/srv/data-1"), "srv-data\\x2d1");
  EXPECT_EQ(systemd_escape_path("/home/"), "home");
  testing::TempDir root("scrub-rootfs");
  auto wants = root / "etc/systemd/system/timers.target.wants";
  std::filesystem::create_directories(wants);
  testing::write_text(wants / "zfs-scrub-monthly@tank.timer", "");
  testing::write_text(wants / "btrfs-scrub@srv-data\\x2d1.timer", "");
  std::filesystem::create_directories(root / "etc/cron.d");
  testing::write_text(root / "etc/cron.d/mdadm", "# comment: checkarray\n57 0 * * 0 root /usr/share/mdadm/checkarray --cron --all\n");
  testing::write_text(root / "etc/cron.d/other", "# btrfs scrub disabled\n");
  auto d = scan_distro_schedulers(root.path());
  EXPECT_EQ(scheduler_for(d, "zfs", "tank"), "zfs-scrub-monthly@tank.timer");
  EXPECT_EQ(scheduler_for(d, "zfs", "tank2"), "");
  EXPECT_EQ(scheduler_for(d, "btrfs", "/srv/data-1"), "btrfs-scrub@srv-data\\x2d1.timer");
  EXPECT_EQ(scheduler_for(d, "btrfs", "/home"), "") << "a commented cron line does not count";
  EXPECT_EQ(scheduler_for(d, "md", "md0"), "cron /etc/cron.d/mdadm");
  EXPECT_EQ(scheduler_for(d, "xfs", "/var"), "");
  testing::write_text(wants / "xfs_scrub_all.timer", "");
  EXPECT_EQ(scheduler_for(scan_distro_schedulers(root.path()), "xfs", "/var"), "xfs_scrub_all.timer");
}

}  // namespace
}  // namespace fsaudit::scrub
