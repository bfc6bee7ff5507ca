// Parser tests on real zpool outputs: ../shared/fixtures (see SOURCES.md there) and captures made
// on this machine from zfs-fuse (tests/data/zfs, made by tests/zfs/zfs_fuse_capture.cpp).
// Expected dates are computed as UTC (ScanTimeZone::utc) with Python's calendar.timegm.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "probes/zfs/probe.hpp"
#include "probes/zfs/scan.hpp"
#include "probes/zfs/status.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::zfs {
namespace {

using testing::fixture;

std::string local_data(const std::string& name) {
  std::ifstream f(std::string(FSAUDIT_TEST_DATA_DIR) + "/zfs/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::string out, line;
  while (std::getline(f, line))
    if (!line.starts_with("# source:")) out += line + "\n";
  return out;
}

ZfsStatusReport status(const std::string& text) {
  auto r = parse_zpool_status(text, ScanTimeZone::utc);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
  return r.ok() ? *r : ZfsStatusReport{};
}
ZfsStatusReport status_fx(const std::string& name) { return status(fixture(name)); }
ZfsStatusReport json_fx(const std::string& name) {
  auto r = parse_zpool_status_json(fixture(name), ScanTimeZone::utc);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
  return r.ok() ? *r : ZfsStatusReport{};
}

const ZfsVdev* vdev(const ZfsPoolStatus& p, const std::string& name) {
  for (const auto& v : p.vdevs)
    if (v.name == name) return &v;
  ADD_FAILURE() << "no vdev " << name << " in pool " << p.name;
  static ZfsVdev none;
  return &none;
}

std::string scan_block_of(const std::string& text) {
  // The lines from "scan:" up to the next "config:" or "..." line.
  std::istringstream in(text);
  std::string line, out;
  bool on = false;
  while (std::getline(in, line)) {
    auto t = line.substr(line.find_first_not_of(" \t") == std::string::npos ? 0 : line.find_first_not_of(" \t"));
    if (t.starts_with("scan:") || t.starts_with("scrub:")) on = true;
    else if (on && (t.starts_with("config:") || t.starts_with("..."))) break;
    if (on) out += line + "\n";
  }
  return out;
}

constexpr double K = 1024.0, M = K * 1024, G = M * 1024, T = G * 1024;

// ---------------------------------------------------------------- scan: block, every wording
TEST(ZfsScan, NoneRequested) {
  auto s = parse_zfs_scan("none requested");
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::none);
  EXPECT_EQ(s.state, ScanState::none);
}

TEST(ZfsScan, EmptyBlockIsNeverScanned) {
  auto s = parse_zfs_scan("");
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.state, ScanState::none);
}

TEST(ZfsScan, LegacyScrubRepairedHoursMinutes) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-freenas-2017-scrub-completed.txt")), ScanTimeZone::utc);
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.state, ScanState::finished);
  EXPECT_EQ(s.repaired_bytes, 0.0);
  EXPECT_EQ(s.duration_seconds, 120.0);  // 0h2m
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.end_time, 1485316047);  // Wed Jan 25 03:47:27 2017
}

TEST(ZfsScan, IllumosScrub29h37m) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-illumos-2016-degraded-unavail-logs.txt")));
  EXPECT_EQ(s.duration_seconds, 29 * 3600.0 + 37 * 60);
  EXPECT_EQ(s.state, ScanState::finished);
}

TEST(ZfsScan, OpenZfsScrubRepairedColonDuration) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-openzfs-2.x-degraded-unavail-was-by-id-ZFS-8000-4J-logs.txt")),
      ScanTimeZone::utc);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.duration_seconds, 14 * 3600.0 + 7);  // 14:00:07
  EXPECT_EQ(s.end_time, 1741530250);                // Sun Mar  9 14:24:10 2025 (double blank)
}

TEST(ZfsScan, ScrubRepaired15Point8M) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-openzfs-2.x-freebsd-scrub-repaired-cksum-130-ZFS-8000-9P.txt")),
      ScanTimeZone::utc);
  EXPECT_DOUBLE_EQ(*s.repaired_bytes, 15.8 * M);
  EXPECT_EQ(s.duration_seconds, 66.0);
  EXPECT_EQ(s.end_time, 1671794348);
}

TEST(ZfsScan, ScrubRepaired27Point9M) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-openzfs-2.x-freebsd-scrub-repaired-cksum-227-ZFS-8000-9P.txt")));
  EXPECT_DOUBLE_EQ(*s.repaired_bytes, 27.9 * M);
}

TEST(ZfsScan, DaysFormDuration) {
  auto r = status_fx("zpool-status-v-openzfs-macos-scrub-canceled.txt");
  ASSERT_EQ(r.pools.size(), 3u);
  EXPECT_EQ(r.pools[1].scan.duration_seconds, 19 * 60.0 + 47);         // 0 days 00:19:47
  EXPECT_EQ(r.pools[2].scan.duration_seconds, 3600 + 25 * 60.0 + 43);  // 0 days 01:25:43
}

TEST(ZfsScan, Canceled) {
  auto r = status_fx("zpool-status-v-openzfs-macos-scrub-canceled.txt");
  ASSERT_FALSE(r.pools.empty());
  const auto& s = r.pools[0].scan;
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.state, ScanState::canceled);
  EXPECT_EQ(s.end_time, 1660923199);  // Fri Aug 19 15:33:19 2022
  EXPECT_FALSE(s.errors.has_value());
}

TEST(ZfsScan, ResilveredFinished432K) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-openzfs-2.x-freebsd-resilvered-432K.txt")),
                          ScanTimeZone::utc);
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_EQ(s.state, ScanState::finished);
  EXPECT_EQ(s.repaired_bytes, 432 * K);
  EXPECT_EQ(s.duration_seconds, 1.0);
  EXPECT_EQ(s.end_time, 1671794063);
}

TEST(ZfsScan, ResilveredWithErrors) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-v-openzfs-2.x-cksum-8-permanent-errors-zvol-objects.txt")));
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_EQ(s.errors, 4u);
  EXPECT_EQ(s.repaired_bytes, 0.0);
}

TEST(ZfsScan, ScrubWith1937Errors) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-v-zol-0.6.5-scrub-with-errors-cksum-2.04K-permanent-errors.txt")));
  EXPECT_EQ(s.errors, 1937u);
  EXPECT_EQ(s.duration_seconds, 3 * 3600.0 + 49 * 60);
}

TEST(ZfsScan, InProgressScannedIssuedTotal) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-openzfs-2.x-freebsd-scrub-in-progress.txt")),
                          ScanTimeZone::utc);
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_EQ(s.start_time, 1671794282);  // Fri Dec 23 11:18:02 2022
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 3.62 * G);
  EXPECT_DOUBLE_EQ(*s.issued_bytes, 378 * M);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 3.62 * G);
  EXPECT_DOUBLE_EQ(*s.scan_rate_bytes_per_second, 530 * M);
  EXPECT_DOUBLE_EQ(*s.issue_rate_bytes_per_second, 54.0 * M);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.1018);
  EXPECT_EQ(s.eta_seconds, 61.0);  // 00:01:01 to go
  EXPECT_EQ(s.repaired_bytes, 0.0);
  EXPECT_FALSE(s.end_time.has_value());
}

TEST(ZfsScan, InProgressNoEstimatedCompletion) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-openzfs-2.x-degraded-raidz2-unavail-was-dev-scrub-in-progress.txt")),
      ScanTimeZone::utc);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_EQ(s.start_time, 1689549705);
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 6.99 * T);
  EXPECT_DOUBLE_EQ(*s.issued_bytes, 6.68 * T);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 32.1 * T);
  EXPECT_EQ(s.issue_rate_bytes_per_second, 0.0);  // "0B/s"
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.208);
  EXPECT_FALSE(s.eta_seconds.has_value());
}

TEST(ZfsScan, SlashTotalFormManPage) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-openzfs-2.x-scrub-in-progress-manpage-excerpt.txt")),
                          ScanTimeZone::utc);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_EQ(s.start_time, 1627229269);  // Sun Jul 25 16:07:49 2021
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 403 * M);
  EXPECT_DOUBLE_EQ(*s.issued_bytes, 68.4 * M);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 405 * M);
  EXPECT_DOUBLE_EQ(*s.scan_rate_bytes_per_second, 100 * M);
  EXPECT_DOUBLE_EQ(*s.issue_rate_bytes_per_second, 10 * M);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.1691);
  EXPECT_EQ(s.eta_seconds, 4.0);
}

TEST(ZfsScan, SlashTotalResilverDaysToGo) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-openzfs-2.x-resilver-in-progress-total-slash-format.txt")),
      ScanTimeZone::utc);
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_EQ(s.start_time, 1748265122);
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 12.9 * T);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 17.9 * T);  // the issued side's total is printed last
  EXPECT_DOUBLE_EQ(*s.issued_bytes, 179 * G);
  EXPECT_DOUBLE_EQ(*s.repaired_bytes, 25.6 * G);  // "25.6G resilvered"
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.0098);
  EXPECT_EQ(s.eta_seconds, 86400 + 9 * 3600.0 + 48 * 60 + 34);  // 1 days 09:48:34
}

TEST(ZfsScan, SlashTotalIssuedWithoutRate) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-v-openzfs-2.x-scrub-in-progress-no-eta-permanent-errors.txt")));
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 3.48 * G);
  EXPECT_EQ(s.issued_bytes, 0.0);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 75.7 * G);
  EXPECT_DOUBLE_EQ(*s.scan_rate_bytes_per_second, 8.37 * K);
  EXPECT_FALSE(s.issue_rate_bytes_per_second.has_value());
  EXPECT_EQ(s.progress_ratio, 0.0);
}

TEST(ZfsScan, ResilverInProgress35Days) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-openzfs-2.x-resilver-in-progress-replacing.txt")));
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 599 * G);
  EXPECT_DOUBLE_EQ(*s.issued_bytes, 1.80 * G);
  EXPECT_EQ(s.eta_seconds, 35 * 86400 + 15 * 3600.0 + 39 * 60 + 43);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.0001);
}

TEST(ZfsScan, ResilverHeaderOnlyFixture) {
  auto r = status_fx("zpool-status-openzfs-2.x-resilver-in-progress-header-only.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& s = r.pools[0].scan;
  EXPECT_DOUBLE_EQ(*s.repaired_bytes, 50.2 * G);
  EXPECT_DOUBLE_EQ(*s.issue_rate_bytes_per_second, 231 * M);
  EXPECT_EQ(s.eta_seconds, 86400 + 16 * 3600.0 + 9 * 60 + 43);
  EXPECT_TRUE(r.pools[0].vdevs.empty());  // the author cut the output after the scan block
}

TEST(ZfsScan, Pre08ScannedOutOf) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-pre-0.8-format-rescue-resilver-in-progress.txt")),
                          ScanTimeZone::utc);
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_EQ(s.start_time, 1701258826);
  EXPECT_DOUBLE_EQ(*s.examined_bytes, 14.2 * T);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 37.5 * T);
  EXPECT_DOUBLE_EQ(*s.scan_rate_bytes_per_second, 775 * M);
  EXPECT_EQ(s.eta_seconds, 8 * 3600.0 + 45 * 60);
  EXPECT_DOUBLE_EQ(*s.repaired_bytes, 2.24 * T);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.3787);
}

TEST(ZfsScan, ZfsRcDaysZeroToGo) {
  auto s = parse_zfs_scan(
      scan_block_of(fixture("zpool-status-zfs-0.8-rc-scrub-in-progress-cksum-on-both-mirror-sides.txt")));
  EXPECT_EQ(s.eta_seconds, 2.0);
  EXPECT_DOUBLE_EQ(*s.total_bytes, 88.5 * M);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.2502);
}

TEST(ZfsScan, SolarisScrubNoneRequested) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-v-legacy-solaris-degraded-cannot-open.txt")));
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.state, ScanState::none);
}

TEST(ZfsScan, SolarisScrubCompletedAfter) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-v-legacy-solaris-unavail-permanent-errors.txt")),
                          ScanTimeZone::utc);
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.state, ScanState::finished);
  EXPECT_EQ(s.duration_seconds, 0.0);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.end_time, 1265116122);  // Tue Feb  2 13:08:42 2010
}

TEST(ZfsScan, SolarisResilverInProgressPercent) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-x-legacy-doc-ZFS-8000-9P-resilver-replacing.txt")));
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.0014);
  EXPECT_EQ(s.eta_seconds, 0.0);
}

TEST(ZfsScan, SolarisScrubInProgressFor) {  // the pool-v23 wording; zfs-fuse scrubs here finish
  // too fast to capture one in progress, so this line follows the Solaris print_scrub_status text.
  auto s = parse_zfs_scan("scrub: scrub in progress for 0h1m, 12.34% done, 0h7m to go");
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.state, ScanState::in_progress);
  EXPECT_EQ(s.duration_seconds, 60.0);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.1234);
  EXPECT_EQ(s.eta_seconds, 420.0);
}

TEST(ZfsScan, SolarisScrubStoppedIsCanceled) {  // wording from the Solaris zpool(1M) era
  auto s = parse_zfs_scan("scrub: scrub stopped after 0h3m with 0 errors on Tue Feb  2 13:08:42 2010",
                          ScanTimeZone::utc);
  EXPECT_EQ(s.state, ScanState::canceled);
  EXPECT_EQ(s.duration_seconds, 180.0);
}

TEST(ZfsScan, ZfsFuseScrubCompletedCaptured) {
  auto s = parse_zfs_scan(scan_block_of(local_data("zfs-fuse-status-scrub-completed-clean-96M.txt")),
                          ScanTimeZone::utc);
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_EQ(s.state, ScanState::finished);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.duration_seconds, 0.0);
  EXPECT_EQ(s.end_time, parse_zpool_date("Sun Nov 29 23:55:20 2026", ScanTimeZone::utc));
  EXPECT_TRUE(s.end_time.has_value());
}

TEST(ZfsScan, PausedWithStartedOnLine) {  // wording of OpenZFS 0.8+ print_scan_scrub_resilver_status
  auto s = parse_zfs_scan(
      "scan: scrub paused since Mon Sep  1 13:03:19 2025\n"
      "\tscrub started on Mon Sep  1 12:00:00 2025\n"
      "\t1.00G / 2.00G scanned, 512M / 2.00G issued\n"
      "\t0B repaired, 25.00% done",
      ScanTimeZone::utc);
  EXPECT_TRUE(s.recognized);
  EXPECT_EQ(s.state, ScanState::paused);
  EXPECT_EQ(s.start_time, 1756728000);
  EXPECT_DOUBLE_EQ(*s.issued_bytes, 512 * M);
  EXPECT_DOUBLE_EQ(*s.progress_ratio, 0.25);
}

TEST(ZfsScan, TruncatedLineIsFlaggedNotGuessed) {
  auto s = parse_zfs_scan(scan_block_of(fixture("zpool-status-openzfs-2.x-spares-avail-snipped.txt")));
  EXPECT_FALSE(s.recognized);
  EXPECT_EQ(s.function, ScanFunction::scrub);
  EXPECT_FALSE(s.end_time.has_value());
}

TEST(ZfsScan, GarbageIsUnrecognized) {
  auto s = parse_zfs_scan("something entirely different");
  EXPECT_FALSE(s.recognized);
  EXPECT_EQ(s.state, ScanState::none);
}

TEST(ZfsScan, ElapsedForms) {
  EXPECT_EQ(parse_zpool_elapsed("0h2m"), 120.0);
  EXPECT_EQ(parse_zpool_elapsed("00:01:06"), 66.0);
  EXPECT_EQ(parse_zpool_elapsed("1 days 16:09:43"), 86400 + 16 * 3600.0 + 9 * 60 + 43);
  EXPECT_EQ(parse_zpool_elapsed("1 day 00:00:01"), 86401.0);
  EXPECT_FALSE(parse_zpool_elapsed("<snip>").has_value());
  EXPECT_FALSE(parse_zpool_elapsed("").has_value());
}

// ---------------------------------------------------------------- zpool status text: trees
TEST(ZfsStatusText, TwoPoolsTabIndented) {
  auto r = status_fx("zpool-status-p-openzfs-2.x-healthy-two-pools-scrub-repaired.txt");
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_EQ(r.pools[0].name, "pool0");
  EXPECT_EQ(r.pools[1].name, "pool1");
  EXPECT_EQ(r.pools[0].vdevs.size(), 4u);  // raidz1-0 + 3 disks
  EXPECT_EQ(r.pools[0].vdevs[0].type, "raidz1");
  EXPECT_EQ(r.pools[0].scan.end_time, 1699773723);
  EXPECT_DOUBLE_EQ(*r.pools[1].scan.repaired_bytes, 1 * M);
  EXPECT_EQ(r.pools[1].vdevs[1].name, "nvme-Samsung_SSD_980_500GB_S64DNL0T824602E-part1");
  EXPECT_EQ(r.pools[1].vdevs[1].parent, "mirror-0");
  EXPECT_EQ(r.pools[0].data_errors, 0u);
}

TEST(ZfsStatusText, FreenasSecondPoolHasNoErrorsLine) {
  auto r = status_fx("zpool-status-freenas-2017-scrub-completed.txt");
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_EQ(r.pools[0].data_errors, 0u);
  EXPECT_FALSE(r.pools[1].data_errors.has_value());
  EXPECT_EQ(r.pools[1].vdevs.size(), 6u);
  EXPECT_EQ(r.pools[1].vdevs[1].name, "gptid/a855d0c8-5218-11e3-9e38-10604b926998");
}

TEST(ZfsStatusText, GuidWasDevAndLogsSection) {
  auto r = status_fx("zpool-status-illumos-2016-degraded-unavail-logs.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.state, "DEGRADED");
  EXPECT_EQ(p.see, "http://illumos.org/msg/ZFS-8000-2Q");
  EXPECT_TRUE(p.status.starts_with("One or more devices could not be opened."));
  EXPECT_NE(p.status.find("degraded state."), std::string::npos);  // continuation joined
  auto* g = vdev(p, "9669136929555758172");
  EXPECT_EQ(g->state, "UNAVAIL");
  EXPECT_EQ(g->note, "was /dev/dsk/c0t5000C5006349E003d0s0");
  EXPECT_EQ(g->parent, "mirror-0");
  auto* log = vdev(p, "c0t55CD2E404B73663Dd0");
  EXPECT_EQ(log->role, "log");
  EXPECT_EQ(log->depth, 0);
}

TEST(ZfsStatusText, LogsWithTrailingTabAndCache) {
  auto r = status_fx("zpool-status-openzfs-2.x-degraded-raidz2-unavail-was-dev-scrub-in-progress.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.vdevs.size(), 9u);
  EXPECT_EQ(vdev(p, "raidz2-0")->type, "raidz2");
  EXPECT_FALSE(vdev(p, "raidz2-0")->leaf);
  EXPECT_EQ(vdev(p, "17844476680277185950")->note, "was /dev/sdc1");
  EXPECT_EQ(vdev(p, "nvme0n1p4")->role, "log");
  EXPECT_EQ(vdev(p, "nvme0n1p5")->role, "cache");
  EXPECT_FALSE(pool_is_redundant(p) == false);  // raidz2 data vdev
}

TEST(ZfsStatusText, ByIdNamesWithoutDevPrefix) {
  auto r = status_fx("zpool-status-openzfs-2.x-degraded-unavail-was-by-id-ZFS-8000-4J-logs.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  int leaves = 0;
  for (auto& v : p.vdevs)
    if (v.leaf && v.role == "data") ++leaves;
  EXPECT_EQ(leaves, 7);
  EXPECT_EQ(vdev(p, "15001682754067572671")->note,
            "was /dev/disk/by-id/ata-ST8000DM004-2U9188_ZR14QKCH-part1");
  EXPECT_EQ(vdev(p, "ata-Samsung_SSD_870_EVO_250GB_S6PENM0TC05386X")->role, "log");
  EXPECT_FALSE(p.data_errors.has_value());  // no errors: line in the doc
}

TEST(ZfsStatusText, AbbreviatedCounters1Point05K) {
  auto r = status_fx("zpool-status-openzfs-2.x-faulted-too-many-errors-abbreviated-1.05K-excerpt.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "DEGRADED");  // 'state:' without its leading space
  auto* v = vdev(r.pools[0], "ata-ST8000DM004-2U9188_ZR14QKCH");
  EXPECT_EQ(v->state, "FAULTED");
  EXPECT_EQ(v->read_errors, 7u);
  EXPECT_EQ(v->write_errors, 1075u);  // 1.05K = 1.05 * 1024 (rounded)
  EXPECT_EQ(v->note, "too many errors");
}

TEST(ZfsStatusText, AbbreviatedCksum2Point04KAndPermanentErrors) {
  auto r = status_fx("zpool-status-v-zol-0.6.5-scrub-with-errors-cksum-2.04K-permanent-errors.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.checksum_errors, 2089u);                    // 2.04K on the root row
  EXPECT_EQ(vdev(p, "vdd")->checksum_errors, 4188u);      // 4.09K
  EXPECT_EQ(vdev(p, "mirror-1")->checksum_errors, 4188u);
  EXPECT_EQ(p.data_errors, 2u);  // two entries listed before the reporter's "....."
}

TEST(ZfsStatusText, FreebsdCksum130OnOneMirrorSide) {
  auto r = status_fx("zpool-status-openzfs-2.x-freebsd-scrub-repaired-cksum-130-ZFS-8000-9P.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "ONLINE");
  EXPECT_EQ(vdev(r.pools[0], "gpt/tt1")->checksum_errors, 130u);
  EXPECT_EQ(vdev(r.pools[0], "gpt/tt2")->checksum_errors, 0u);
  EXPECT_TRUE(r.pools[0].see.ends_with("ZFS-8000-9P"));
}

TEST(ZfsStatusText, FreebsdCksum227) {
  auto r = status_fx("zpool-status-openzfs-2.x-freebsd-scrub-repaired-cksum-227-ZFS-8000-9P.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(vdev(r.pools[0], "gpt/tt1")->checksum_errors, 227u);
}

TEST(ZfsStatusText, DegradedMirrorWasGpt) {
  auto r = status_fx("zpool-status-openzfs-2.x-freebsd-degraded-mirror-unavail-was-gpt.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "DEGRADED");
  EXPECT_EQ(vdev(r.pools[0], "13953643250226400519")->note, "was /dev/gpt/tt2");
  EXPECT_FALSE(r.pools[0].has_scan);
  EXPECT_TRUE(r.pools[0].scan.recognized);
}

TEST(ZfsStatusText, FeaturesNoticeHealthy) {
  auto r = status_fx("zpool-status-openzfs-2.x-healthy-features-notice.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "ONLINE");
  EXPECT_EQ(r.pools[0].vdevs.size(), 6u);
  EXPECT_EQ(r.pools[0].scan.duration_seconds, 11 * 3600.0 + 16 * 60 + 3);
  EXPECT_TRUE(pool_is_redundant(r.pools[0]));
}

TEST(ZfsStatusText, ReplacingVdevNested) {
  auto r = status_fx("zpool-status-openzfs-2.x-resilver-in-progress-replacing.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(vdev(p, "replacing-2")->type, "replacing");
  EXPECT_EQ(vdev(p, "replacing-2")->parent, "raidz2-0");
  EXPECT_EQ(vdev(p, "replacing-2")->depth, 1);
  EXPECT_EQ(vdev(p, "17844476680277185950")->state, "OFFLINE");
  EXPECT_EQ(vdev(p, "17844476680277185950")->parent, "replacing-2");
  EXPECT_EQ(vdev(p, "17844476680277185950")->note, "was /dev/sdc1/old");
  EXPECT_EQ(vdev(p, "sdd")->parent, "raidz2-0");  // back up one level after the replacing group
}

TEST(ZfsStatusText, ResilveringNoteOnNewDisk) {
  auto r = status_fx("zpool-status-openzfs-2.x-resilver-in-progress-total-slash-format.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(vdev(r.pools[0], "ata-ST8000DM004-2U9188_ZR165ZXT")->note, "(resilvering)");
  EXPECT_EQ(vdev(r.pools[0], "replacing-5")->parent, "raidz1-0");
}

TEST(ZfsStatusText, Pre08OldOfflineMember) {
  auto r = status_fx("zpool-status-pre-0.8-format-rescue-resilver-in-progress.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(vdev(r.pools[0], "old")->state, "OFFLINE");
  EXPECT_EQ(vdev(r.pools[0], "old")->parent, "replacing-5");
  EXPECT_EQ(vdev(r.pools[0], "sdb")->state, "OFFLINE");
}

TEST(ZfsStatusText, SpareSectionAvail) {
  auto r = status_fx("zpool-status-openzfs-2.x-spares-avail-snipped.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  auto* s = vdev(r.pools[0], "sdf");
  EXPECT_EQ(s->role, "spare");
  EXPECT_EQ(s->state, "AVAIL");
  EXPECT_FALSE(s->read_errors.has_value());
  EXPECT_EQ(r.pools[0].vdevs.size(), 13u);
}

TEST(ZfsStatusText, SpareInUseWithCksumInside) {
  auto r = status_fx("zpool-status-zol-0.6-degraded-spare-in-use-cksum.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(vdev(p, "spare-0")->type, "spare");
  EXPECT_EQ(vdev(p, "spare-0")->read_errors, 1u);
  EXPECT_EQ(vdev(p, "ata-VBOX_HARDDISK_VBb80f1f56-538e9acf")->checksum_errors, 1u);
  EXPECT_EQ(vdev(p, "ata-VBOX_HARDDISK_VBb80f1f56-538e9acf")->parent, "spare-0");
  int spares = 0;
  for (auto& v : p.vdevs)
    if (v.role == "spare") ++spares;
  EXPECT_EQ(spares, 4);
  EXPECT_EQ(vdev(p, "pci-0000:00:0d.0-scsi-10:0:0:0")->type, "leaf");  // ':' in a leaf name
}

TEST(ZfsStatusText, SuspendedPool96DataErrors) {
  auto r = status_fx("zpool-status-openzfs-2.x-suspended-96-data-errors.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "SUSPENDED");
  EXPECT_EQ(r.pools[0].root_state, "UNAVAIL");
  EXPECT_EQ(r.pools[0].data_errors, 96u);
  EXPECT_EQ(vdev(r.pools[0], "sdc")->write_errors, 176u);
  EXPECT_FALSE(pool_is_redundant(r.pools[0]));  // two single-disk top-level vdevs
}

TEST(ZfsStatusText, Suspended67DataErrorsTooManyErrors) {
  auto r = status_fx("zpool-status-openzfs-2.x-suspended-faulted-too-many-errors-67-data-errors.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].data_errors, 67u);
  EXPECT_EQ(vdev(r.pools[0], "sdc")->state, "FAULTED");
  EXPECT_EQ(vdev(r.pools[0], "sdc")->read_errors, 8u);
  EXPECT_EQ(vdev(r.pools[0], "sdc")->write_errors, 126u);
}

TEST(ZfsStatusText, ListOfErrorsUnavailableIsUnknown) {
  auto r = status_fx("zpool-status-v-openzfs-2.x-suspended-list-of-errors-unavailable.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_FALSE(r.pools[0].data_errors.has_value());
  EXPECT_TRUE(r.pools[0].errors_text.starts_with("List of errors unavailable"));
}

TEST(ZfsStatusText, PermanentErrorZvolObjects) {
  auto r = status_fx("zpool-status-v-openzfs-2.x-cksum-8-permanent-errors-zvol-objects.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].data_errors, 5u);
  EXPECT_EQ(vdev(r.pools[0], "sdc")->checksum_errors, 8u);
}

TEST(ZfsStatusText, PermanentErrorsUnindentedFileList) {
  auto r = status_fx("zpool-status-v-legacy-solaris-unavail-permanent-errors.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "UNAVAIL");
  EXPECT_EQ(r.pools[0].data_errors, 3u);
  EXPECT_EQ(vdev(r.pools[0], "c1t1d0")->read_errors, 4u);
  EXPECT_EQ(vdev(r.pools[0], "c1t1d0")->write_errors, 1u);
  EXPECT_EQ(vdev(r.pools[0], "c1t1d0")->note, "cannot open");
}

TEST(ZfsStatusText, ScrubInProgressNoEtaFourteenErrorsListed) {
  auto r = status_fx("zpool-status-v-openzfs-2.x-scrub-in-progress-no-eta-permanent-errors.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].scan.state, ScanState::in_progress);
  EXPECT_EQ(r.pools[0].data_errors, 14u);
}

TEST(ZfsStatusText, SolarisTwoPoolsUnavailRaidz) {
  auto r = status_fx("zpool-status-solaris-2011-degraded-and-unavail-pools.txt");
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_EQ(r.pools[0].scan.function, ScanFunction::resilver);
  EXPECT_DOUBLE_EQ(*r.pools[0].scan.repaired_bytes, 1.41 * M);
  EXPECT_EQ(r.pools[1].state, "UNAVAIL");
  EXPECT_EQ(vdev(r.pools[1], "raidz1-0")->note, "insufficient replicas");
  EXPECT_EQ(vdev(r.pools[1], "c4d1p2")->note, "cannot open");
  EXPECT_EQ(r.pools[1].scan.state, ScanState::none);
}

TEST(ZfsStatusText, LegacyMirrorWithoutIdAndFaulted) {
  auto r = status_fx("zpool-status-x-legacy-doc-ZFS-8000-2Q-degraded-faulted-cannot-open.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(vdev(r.pools[0], "mirror")->type, "mirror");
  EXPECT_EQ(vdev(r.pools[0], "sdb")->state, "FAULTED");
  EXPECT_EQ(vdev(r.pools[0], "sdb")->parent, "mirror");
}

TEST(ZfsStatusText, LegacyOneDataErrorUseV) {
  auto r = status_fx("zpool-status-x-legacy-doc-ZFS-8000-8A-data-errors-use-v.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].data_errors, 1u);
  EXPECT_EQ(vdev(r.pools[0], "sda")->checksum_errors, 2u);
  EXPECT_FALSE(pool_is_redundant(r.pools[0]));
}

TEST(ZfsStatusText, LegacyMirrorCksumRepaired) {
  auto r = status_fx("zpool-status-x-legacy-doc-ZFS-8000-9P-mirror-cksum-repaired.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(vdev(r.pools[0], "sda")->checksum_errors, 2u);
  EXPECT_EQ(r.pools[0].data_errors, 0u);
  EXPECT_TRUE(pool_is_redundant(r.pools[0]));
}

TEST(ZfsStatusText, LegacyReplacingResilveredNote) {
  auto r = status_fx("zpool-status-x-legacy-doc-ZFS-8000-9P-resilver-replacing.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].state, "DEGRADED");
  EXPECT_EQ(vdev(r.pools[0], "sdc")->note, "58.5K resilvered");
  EXPECT_EQ(vdev(r.pools[0], "sdc")->parent, "replacing");
  EXPECT_EQ(vdev(r.pools[0], "sdb")->parent, "mirror");
  EXPECT_EQ(vdev(r.pools[0], "sda")->checksum_errors, 3u);
}

TEST(ZfsStatusText, XvPermanentErrorFileList) {
  auto r = status_fx("zpool-status-xv-legacy-doc-ZFS-8000-8A-permanent-errors-file-list.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].data_errors, 1u);  // /export/example/foo
}

TEST(ZfsStatusText, ZfsRcCksumOnBothMirrorSides) {
  auto r = status_fx("zpool-status-zfs-0.8-rc-scrub-in-progress-cksum-on-both-mirror-sides.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(vdev(r.pools[0], "ram0")->checksum_errors, 162u);
  EXPECT_EQ(vdev(r.pools[0], "ram1")->checksum_errors, 54u);
}

TEST(ZfsStatusText, Zol07TwoPoolsFileVdevs) {
  auto r = status_fx("zpool-status-zol-0.7-ubuntu18.04-healthy-scan-none-requested.txt");
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_EQ(vdev(r.pools[0], "/var/lib/g05/z1.img")->parent, "mirror-0");
  EXPECT_EQ(r.pools[1].vdevs.size(), 1u);
  EXPECT_TRUE(r.pools[1].vdevs[0].leaf);
  EXPECT_TRUE(pool_is_redundant(r.pools[0]));
  EXPECT_FALSE(pool_is_redundant(r.pools[1]));
}

TEST(ZfsStatusText, MacosNoBlankLines) {
  auto r = status_fx("zpool-status-v-openzfs-macos-scrub-canceled.txt");
  ASSERT_EQ(r.pools.size(), 3u);
  EXPECT_EQ(r.pools[0].vdevs.size(), 1u);
  EXPECT_EQ(r.pools[0].vdevs[0].name, "726060ALE614-K8JAPRGN:10");
  EXPECT_EQ(r.pools[2].data_errors, 0u);
}

TEST(ZfsStatusText, SlowColumnAllSections) {
  auto r = status_fx("zpool-status-Ps-openzfs-2.4.2-freebsd15.1-fullpaths-slow-column.txt");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.vdevs.size(), 13u);
  EXPECT_EQ(vdev(p, "mirror-3")->role, "special");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f10.img")->role, "special");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f6.img")->role, "log");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f7.img")->role, "cache");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f8.img")->role, "spare");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f1.img")->note, "");  // SLOW column not taken as a note
  EXPECT_TRUE(pool_is_redundant(p));
}

TEST(ZfsStatusText, SlowColumnOlderReleases) {
  for (auto name : {"zpool-status-s-openzfs-2.1.15-freebsd13.5-mirror-healthy.txt",
                    "zpool-status-s-openzfs-2.2.9-freebsd14.5-healthy-single-disk.txt"}) {
    auto r = status_fx(name);
    ASSERT_EQ(r.pools.size(), 1u) << name;
    for (auto& v : r.pools[0].vdevs) {
      EXPECT_EQ(v.checksum_errors, 0u) << name;
      EXPECT_EQ(v.note, "") << name;
    }
    EXPECT_FALSE(r.pools[0].has_scan);
  }
}

TEST(ZfsStatusText, NoPoolsAndHealthy) {
  auto a = parse_zpool_status("no pools available\n");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->no_pools);
  auto b = parse_zpool_status("all pools are healthy\n");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->pools.empty());
}

TEST(ZfsStatusText, NotStatusOutputIsAnError) {
  auto r = parse_zpool_status(local_data("zfs-fuse-status-p-rejected.stderr.txt"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("invalid option"), std::string::npos);
}

// ---------------------------------------------------------------- zfs-fuse captures (this machine)
TEST(ZfsFuseCapture, HealthyMirrorNeverScrubbed) {
  auto r = status(local_data("zfs-fuse-status-healthy-mirror-never-scrubbed-96M.txt"));
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.name, "fsauditcap");
  EXPECT_EQ(p.state, "ONLINE");
  EXPECT_TRUE(p.has_scan);
  EXPECT_EQ(p.scan.state, ScanState::none);
  ASSERT_EQ(p.vdevs.size(), 3u);
  EXPECT_EQ(p.vdevs[0].type, "mirror");
  EXPECT_EQ(p.vdevs[1].parent, "mirror-0");
  EXPECT_TRUE(p.vdevs[1].name.ends_with("/vdev-a.img"));
  EXPECT_TRUE(pool_is_redundant(p));
}

TEST(ZfsFuseCapture, AfterCorruptionScrubCksumAndRepairedNote) {
  auto r = status(local_data("zfs-fuse-status-after-corruption-scrub-cksum-96M.txt"));
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.state, "ONLINE");
  EXPECT_TRUE(p.see.ends_with("ZFS-8000-9P"));
  ASSERT_EQ(p.vdevs.size(), 3u);
  EXPECT_EQ(p.vdevs[1].checksum_errors, 0u);
  EXPECT_EQ(p.vdevs[2].checksum_errors, 136u);
  EXPECT_EQ(p.vdevs[2].note, "9.41M repaired");
  EXPECT_EQ(p.scan.state, ScanState::finished);
  EXPECT_EQ(p.scan.errors, 0u);
}

TEST(ZfsFuseCapture, AbbreviatedCksum3Point45K) {
  auto r = status(local_data("zfs-fuse-status-after-corruption-scrub-cksum-2000M.txt"));
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].vdevs[2].checksum_errors, 3533u);  // "3.45K"
  EXPECT_EQ(r.pools[0].vdevs[2].note, "403M repaired");
}

TEST(ZfsFuseCapture, TwoPools) {
  auto r = status(local_data("zfs-fuse-status-two-pools-2000M.txt"));
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_EQ(r.pools[1].name, "fsauditcap2");
  EXPECT_EQ(r.pools[1].vdevs.size(), 1u);
  EXPECT_EQ(r.pools[1].scan.state, ScanState::none);
  EXPECT_FALSE(pool_is_redundant(r.pools[1]));
}

TEST(ZfsFuseCapture, StatusXShowsOnlyTheUnhealthyPool) {
  auto r = status(local_data("zfs-fuse-status-x-one-unhealthy-2000M.txt"));
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].name, "fsauditcap");
}

TEST(ZfsFuseCapture, ListLegacyColumns) {
  auto l = parse_zpool_list(local_data("zfs-fuse-list-H-o-with-data-96M.txt"), "name,size,allocated,free,capacity,health");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 1u);
  EXPECT_DOUBLE_EQ(*(*l)[0].size_bytes, std::round(91.5 * M));
  EXPECT_DOUBLE_EQ(*(*l)[0].allocated_bytes, std::round(40.4 * M));
  EXPECT_DOUBLE_EQ(*(*l)[0].free_bytes, std::round(51.1 * M));
  EXPECT_DOUBLE_EQ(*(*l)[0].capacity_ratio, 0.44);
  EXPECT_EQ((*l)[0].health, "ONLINE");
  EXPECT_FALSE((*l)[0].fragmentation_ratio.has_value());
}

TEST(ZfsFuseCapture, ListTwoPoolsKilobytes) {
  auto l = parse_zpool_list(local_data("zfs-fuse-list-H-o-two-pools-2000M.txt"), "name,size,allocated,free,capacity,health");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 2u);
  EXPECT_DOUBLE_EQ(*(*l)[1].allocated_bytes, 94 * K);
  EXPECT_DOUBLE_EQ(*(*l)[0].size_bytes, std::round(1.94 * G));
}

TEST(ZfsFuseCapture, ListDefaultWithHeader) {
  auto l = parse_zpool_list(local_data("zfs-fuse-list-default-96M.txt"), "");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 1u);
  EXPECT_DOUBLE_EQ(*(*l)[0].dedup_ratio, 1.0);
  EXPECT_DOUBLE_EQ(*(*l)[0].allocated_bytes, 97 * K);
}

// ---------------------------------------------------------------- zpool list fixtures
TEST(ZfsList, FreeBsd14ExactNoPercentSigns) {
  auto l = parse_zpool_list(fixture("zpool-list-Hp-o-name-health-size-alloc-free-frag-cap-dedup-freebsd14.txt"),
                            "name,health,size,alloc,free,frag,cap,dedup");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 1u);
  const auto& z = (*l)[0];
  EXPECT_EQ(z.name, "zroot");
  EXPECT_EQ(z.size_bytes, 67108864000.0);
  EXPECT_EQ(z.allocated_bytes, 11959578624.0);
  EXPECT_EQ(z.free_bytes, 55149285376.0);
  EXPECT_DOUBLE_EQ(*z.fragmentation_ratio, 0.04);
  EXPECT_DOUBLE_EQ(*z.capacity_ratio, 0.17);
  EXPECT_DOUBLE_EQ(*z.dedup_ratio, 1.0);
}

TEST(ZfsList, FreenasLegacyPercentAndX) {
  auto l = parse_zpool_list(fixture("zpool-list-Hp-o-name-health-size-alloc-free-frag-cap-dedup-freenas-legacy.txt"),
                            "name,health,size,allocated,free,fragmentation,capacity,dedupratio");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 4u);
  EXPECT_FALSE((*l)[0].fragmentation_ratio.has_value());  // "-"
  EXPECT_DOUBLE_EQ(*(*l)[1].fragmentation_ratio, 0.08);
  EXPECT_DOUBLE_EQ(*(*l)[1].dedup_ratio, 1.83);
  EXPECT_EQ((*l)[2].size_bytes, 2989297238016.0);
  EXPECT_DOUBLE_EQ(*(*l)[2].capacity_ratio, 0.54);
}

TEST(ZfsList, UnavailPoolAllDashes) {
  auto l = parse_zpool_list(fixture("zpool-list-Hp-o-name-health-size-alloc-free-frag-cap-dedup-unavail.txt"),
                            "name,health,size,alloc,free,frag,cap,dedup");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].health, "UNAVAIL");
  EXPECT_FALSE((*l)[0].size_bytes.has_value());
  EXPECT_FALSE((*l)[0].dedup_ratio.has_value());
}

TEST(ZfsList, VerboseWithHeaderSkipsVdevRows) {
  auto l = parse_zpool_list(fixture("zpool-list-p-v-linux-mirror-nvme.txt"), "");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].name, "rpool");
  EXPECT_EQ((*l)[0].size_bytes, 3985729650688.0);
  EXPECT_DOUBLE_EQ(*(*l)[0].fragmentation_ratio, 0.55);
  EXPECT_EQ((*l)[0].health, "ONLINE");
}

TEST(ZfsList, VerboseDegradedLogsCache) {
  auto l = parse_zpool_list(fixture("zpool-list-p-v-linux-degraded-logs-cache-unavail.txt"), "");
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].health, "DEGRADED");
  EXPECT_EQ((*l)[0].allocated_bytes, 3046188658688.0);
}

TEST(ZfsList, WrongFieldCountIsAnError) {
  auto l = parse_zpool_list("tank\tONLINE\n", "name,size,health");
  EXPECT_FALSE(l.ok());
}

// ---------------------------------------------------------------- zpool status -j
TEST(ZfsStatusJson, FreeBsd24AllSectionsStringNumbers) {
  auto r = json_fx("zpool-status-jp-openzfs-2.4.2-freebsd15.1-mirror-raidz-special-log-cache-spare.json");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.name, "mqltest");
  EXPECT_EQ(p.state, "ONLINE");
  EXPECT_EQ(p.data_errors, 0u);
  EXPECT_EQ(p.root_state, "ONLINE");
  EXPECT_EQ(p.vdevs.size(), 13u);  // same tree as the text -Ps fixture of this pool
  EXPECT_EQ(vdev(p, "mirror-0")->type, "mirror");
  EXPECT_EQ(vdev(p, "raidz1-1")->type, "raidz1");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f3.img")->parent, "raidz1-1");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f3.img")->type, "file");
  EXPECT_EQ(vdev(p, "mirror-3")->role, "special");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f6.img")->role, "log");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f7.img")->role, "cache");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f8.img")->role, "spare");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f8.img")->state, "AVAIL");
  EXPECT_EQ(vdev(p, "/var/tmp/mqlzfs/f1.img")->checksum_errors, 0u);
  EXPECT_TRUE(pool_is_redundant(p));
  EXPECT_FALSE(p.has_scan);
}

TEST(ZfsStatusJson, ManPage23HumanStringsDedupSpecial) {
  auto r = json_fx("zpool-status-j-openzfs-2.3-manpage-example-raidz-dedup-special.json");
  ASSERT_EQ(r.pools.size(), 1u);
  const auto& p = r.pools[0];
  EXPECT_EQ(p.name, "tank");
  EXPECT_EQ(vdev(p, "raidz1-0")->type, "raidz1");
  EXPECT_EQ(vdev(p, "25d418f8-92bd-4327-b59f-7ef5d5f50d81")->role, "special");
  EXPECT_EQ(vdev(p, "mirror-2")->role, "dedup");
  EXPECT_EQ(vdev(p, "db017360-d8e9-4163-961b-144ca75293a3")->parent, "mirror-2");
  EXPECT_FALSE(pool_is_redundant(p));  // the special vdev is a single disk
}

TEST(ZfsStatusJson, IntsAndScanStatsFromSourceFieldNames) {
  // No real -j sample with scan_stats exists (SOURCES.md "Not found"); field names from zpool_main.c.
  auto r = parse_zpool_status_json(R"({"output_version":{"command":"zpool status","vers_major":0,"vers_minor":1},
    "pools":{"t":{"name":"t","state":"DEGRADED","error_count":3,
      "scan_stats":{"function":"SCRUB","state":"SCANNING","start_time":1700000000,"end_time":0,
        "to_examine":1000,"examined":600,"skipped":0,"processed":4096,"errors":0,"issued":250,
        "scrub_pause":"0","scrub_spent_paused":"0"},
      "vdevs":{"t":{"name":"t","vdev_type":"root","state":"DEGRADED","read_errors":0,"write_errors":0,"checksum_errors":5,
        "vdevs":{"mirror-0":{"name":"mirror-0","vdev_type":"mirror","state":"DEGRADED","read_errors":0,"write_errors":0,"checksum_errors":5,
          "vdevs":{"a":{"name":"a","vdev_type":"disk","state":"ONLINE","read_errors":0,"write_errors":0,"checksum_errors":5},
                   "b":{"name":"b","vdev_type":"disk","state":"REMOVED","read_errors":"1.05K","write_errors":"0","checksum_errors":"0"}}}}}}}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  const auto& p = r->pools[0];
  EXPECT_EQ(p.data_errors, 3u);
  EXPECT_EQ(vdev(p, "a")->checksum_errors, 5u);
  EXPECT_EQ(vdev(p, "b")->read_errors, 1075u);
  EXPECT_EQ(p.scan.function, ScanFunction::scrub);
  EXPECT_EQ(p.scan.state, ScanState::in_progress);
  EXPECT_EQ(p.scan.start_time, 1700000000);
  EXPECT_DOUBLE_EQ(*p.scan.progress_ratio, 0.25);
  EXPECT_EQ(p.scan.repaired_bytes, 4096.0);
}

TEST(ZfsStatusJson, FinishedScanDateStrings) {
  auto r = parse_zpool_status_json(R"({"pools":{"t":{"name":"t","state":"ONLINE",
      "scan_stats":{"function":"RESILVER","state":"FINISHED","start_time":"Fri Dec 23 11:14:22 2022",
      "end_time":"Fri Dec 23 11:14:23 2022","to_examine":"432K","examined":"432K","processed":"432K","errors":"0"}}}})",
                                   ScanTimeZone::utc);
  ASSERT_TRUE(r.ok()) << r.error();
  const auto& s = r->pools[0].scan;
  EXPECT_EQ(s.function, ScanFunction::resilver);
  EXPECT_EQ(s.state, ScanState::finished);
  EXPECT_EQ(s.end_time, 1671794063);
  EXPECT_EQ(s.duration_seconds, 1.0);
  EXPECT_EQ(s.repaired_bytes, 432 * K);
}

TEST(ZfsStatusJson, InvalidJsonIsAnError) {
  EXPECT_FALSE(parse_zpool_status_json("  pool: tank\n state: ONLINE\n").ok());
  auto none = parse_zpool_status_json(R"({"output_version":{"command":"zpool status"}})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->no_pools);
}

TEST(ZfsStatusJson, JsonAndTextOfTheSamePoolAgree) {
  auto j = json_fx("zpool-status-jp-openzfs-2.4.2-freebsd15.1-mirror-raidz-special-log-cache-spare.json");
  auto t = status_fx("zpool-status-Ps-openzfs-2.4.2-freebsd15.1-fullpaths-slow-column.txt");
  ASSERT_EQ(j.pools.size(), 1u);
  ASSERT_EQ(t.pools.size(), 1u);
  ASSERT_EQ(j.pools[0].vdevs.size(), t.pools[0].vdevs.size());
  for (std::size_t i = 0; i < t.pools[0].vdevs.size(); ++i) {
    const auto& a = t.pools[0].vdevs[i];
    const auto* b = vdev(j.pools[0], a.name);
    EXPECT_EQ(a.role, b->role) << a.name;
    EXPECT_EQ(a.parent, b->parent) << a.name;
    EXPECT_EQ(a.depth, b->depth) << a.name;
    EXPECT_EQ(a.state, b->state) << a.name;
    EXPECT_EQ(a.leaf, b->leaf) << a.name;
  }
}

// ---------------------------------------------------------------- metrics from parsed output
TEST(ZfsMetrics, CksumVdevStateSetAndScan) {
  auto r = status(local_data("zfs-fuse-status-after-corruption-scrub-cksum-96M.txt"));
  auto l = parse_zpool_list(local_data("zfs-fuse-list-H-o-with-data-96M.txt"), "name,size,allocated,free,capacity,health");
  ASSERT_TRUE(l.ok());
  std::map<std::string, ScrubMemory> mem;
  auto b = build_zfs_metrics(r, *l, StatusFormat::text, mem);
  const std::string vb = r.pools[0].vdevs[2].name;
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_errors", {{"pool", "fsauditcap"}, {"vdev", vb}, {"kind", "checksum"}}), 136);
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_errors", {{"pool", "fsauditcap"}, {"vdev", vb}, {"kind", "read"}}), 0);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_state", {{"pool", "fsauditcap"}, {"state", "online"}}), 1);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_state", {{"pool", "fsauditcap"}, {"state", "degraded"}}), 0);
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_state", {{"vdev", "mirror-0"}, {"state", "online"}}), 1);
  EXPECT_EQ(b.value("fsaudit_zfs_scan_state", {{"pool", "fsauditcap"}, {"state", "finished"}}), 1);
  EXPECT_EQ(b.value("fsaudit_zfs_scan_function", {{"pool", "fsauditcap"}, {"state", "scrub"}}), 1);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_redundant", {{"pool", "fsauditcap"}}), 1);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_data_errors", {{"pool", "fsauditcap"}}), 0);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap"}}), std::round(40.4 * M));
  EXPECT_TRUE(b.has("fsaudit_zfs_last_scrub_end_timestamp_seconds", {{"pool", "fsauditcap"}}));
  EXPECT_EQ(b.value("fsaudit_zfs_probe_info", {{"format", "text"}}), 1);
}

TEST(ZfsMetrics, LastScrubSurvivesALaterResilver) {
  std::map<std::string, ScrubMemory> mem;
  auto scrub = status_fx("zpool-status-openzfs-2.x-freebsd-scrub-repaired-cksum-130-ZFS-8000-9P.txt");
  (void)build_zfs_metrics(scrub, {}, StatusFormat::text_p, mem);
  auto resilver = status_fx("zpool-status-openzfs-2.x-freebsd-degraded-mirror-unavail-was-gpt.txt");
  auto b = build_zfs_metrics(resilver, {}, StatusFormat::text_p, mem);
  EXPECT_EQ(b.value("fsaudit_zfs_last_scrub_end_timestamp_seconds", {{"pool", "ztest"}}), 1671794348);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_zfs_last_scrub_repaired_bytes", {{"pool", "ztest"}}), 15.8 * M);
  EXPECT_EQ(b.value("fsaudit_zfs_scan_state", {{"pool", "ztest"}, {"state", "none"}}), 1);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_state", {{"pool", "ztest"}, {"state", "degraded"}}), 1);
}

TEST(ZfsMetrics, InProgressScanGauges) {
  std::map<std::string, ScrubMemory> mem;
  auto r = status_fx("zpool-status-openzfs-2.x-freebsd-scrub-in-progress.txt");
  auto b = build_zfs_metrics(r, {}, StatusFormat::text_p, mem);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_zfs_scan_progress_ratio", {{"pool", "ztest"}}), 0.1018);
  EXPECT_EQ(b.value("fsaudit_zfs_scan_eta_seconds", {{"pool", "ztest"}}), 61);
  EXPECT_FALSE(b.has("fsaudit_zfs_last_scrub_end_timestamp_seconds"));
}

TEST(ZfsMetrics, RepeatedLegacyVdevNamesStayDistinct) {
  std::string text =
      "  pool: old\n state: ONLINE\n scrub: none requested\nconfig:\n\n"
      "        NAME        STATE     READ WRITE CKSUM\n"
      "        old         ONLINE       0     0     0\n"
      "          mirror    ONLINE       0     0     0\n"
      "            c0d0    ONLINE       0     0     1\n"
      "            c1d0    ONLINE       0     0     0\n"
      "          mirror    ONLINE       0     0     0\n"
      "            c2d0    ONLINE       0     0     0\n"
      "            c3d0    ONLINE       0     0     2\n\nerrors: No known data errors\n";
  auto r = status(text);
  std::map<std::string, ScrubMemory> mem;
  auto b = build_zfs_metrics(r, {}, StatusFormat::text, mem);
  EXPECT_TRUE(b.has("fsaudit_zfs_vdev_state", {{"vdev", "mirror"}}));
  EXPECT_TRUE(b.has("fsaudit_zfs_vdev_state", {{"vdev", "mirror#2"}}));
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_errors", {{"vdev", "c3d0"}, {"kind", "checksum"}}), 2);
  EXPECT_EQ(r.pools[0].vdevs[5].parent, "mirror");
}

}  // namespace
}  // namespace fsaudit::zfs

namespace fsaudit::zfs {
namespace {

TEST(ZfsGet, HpAllFreebsd11LegacyPercentAndX) {
  auto r = parse_zpool_get(testing::fixture("zpool-get-Hp-all-freebsd11-legacy-inspec.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  const auto& t = (*r)[0];
  EXPECT_EQ(t.name, "tank");
  EXPECT_EQ(t.size_bytes, 4982162063360.0);
  EXPECT_EQ(t.allocated_bytes, 3765733466112.0);
  EXPECT_EQ(t.free_bytes, 1216428597248.0);
  EXPECT_DOUBLE_EQ(*t.fragmentation_ratio, 0.49);
  EXPECT_DOUBLE_EQ(*t.capacity_ratio, 0.75);
  EXPECT_DOUBLE_EQ(*t.dedup_ratio, 1.0);
  EXPECT_EQ(t.health, "ONLINE");
}

TEST(ZfsGet, HpAllOpenZfs229) {
  auto r = parse_zpool_get(testing::fixture("zpool-get-Hp-all-openzfs-2.2.9-freebsd14.5.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].size_bytes, 57445187584.0);
  EXPECT_DOUBLE_EQ(*(*r)[0].fragmentation_ratio, 0.02);
  EXPECT_DOUBLE_EQ(*(*r)[0].capacity_ratio, 0.27);
}

TEST(ZfsGet, HpAllZol06TwoPools) {
  auto r = parse_zpool_get(testing::fixture("zpool-get-Hp-all-zol-0.6-ubuntu16.04-two-pools.txt"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "mpool");
  EXPECT_DOUBLE_EQ(*(*r)[0].fragmentation_ratio, 0.01);
  EXPECT_EQ((*r)[1].name, "tank");
  EXPECT_EQ((*r)[1].allocated_bytes, 263168.0);
}

TEST(ZfsGet, HpAllAndJpAllOfTheSamePoolAgree) {
  auto t = parse_zpool_get(testing::fixture("zpool-get-Hp-all-openzfs-2.4.2-freebsd15.1.txt"));
  auto j = parse_zpool_get_json(testing::fixture("zpool-get-jp-all-openzfs-2.4.2-freebsd15.1.json"));
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_TRUE(j.ok()) << j.error();
  ASSERT_EQ(t->size(), 1u);
  ASSERT_EQ(j->size(), 1u);
  EXPECT_EQ((*j)[0].name, "mqltest");
  EXPECT_EQ((*j)[0].size_bytes, 603979776.0);
  EXPECT_EQ((*j)[0].allocated_bytes, 254976.0);
  EXPECT_EQ((*j)[0].free_bytes, 603724800.0);
  EXPECT_EQ((*j)[0].health, "ONLINE");
  EXPECT_EQ((*t)[0].size_bytes, (*j)[0].size_bytes);
  EXPECT_EQ((*t)[0].free_bytes, (*j)[0].free_bytes);
  EXPECT_EQ((*t)[0].fragmentation_ratio, (*j)[0].fragmentation_ratio);
  EXPECT_EQ((*t)[0].dedup_ratio, (*j)[0].dedup_ratio);
}

}  // namespace
}  // namespace fsaudit::zfs
