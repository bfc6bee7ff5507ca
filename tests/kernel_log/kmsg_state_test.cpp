// kmsg record parser on records captured from this machine's /dev/kmsg; state round trip; source
// choice and target attribution on fixture trees.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "daemon/core/strings.hpp"
#include "probes/kernel_log/attribution.hpp"
#include "probes/kernel_log/probe.hpp"
#include "probes/kernel_log/kmsg_record.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::kernel_log {
namespace {

namespace fs = std::filesystem;

// Splits the raw capture into records: a record starts at a line that does not begin with a blank;
// " KEY=value" dictionary lines belong to the record before.
std::vector<std::string> raw_records() {
  std::ifstream in(std::string(FSAUDIT_TEST_DATA_DIR) + "/kernel_log/kmsg-raw-records-kernel-6.18.txt");
  std::string line;
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    if (line.rfind("# source:", 0) == 0) continue;
    if (!line.empty() && line[0] == ' ' && !out.empty()) out.back() += line + "\n";
    else out.push_back(line + "\n");
  }
  return out;
}

TEST(KmsgRecord, ParsesCapturedRecordsWithDictionaries) {
  auto recs = raw_records();
  ASSERT_EQ(recs.size(), 22u);
  auto r0 = parse_kmsg_record(recs[0]);
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->level, 6);
  EXPECT_EQ(r0->facility, 0);
  EXPECT_EQ(r0->seq, 185u);
  EXPECT_EQ(r0->ts_usec, 242139u);
  EXPECT_EQ(r0->flags, '-');
  EXPECT_EQ(r0->message, "acpi PNP0A08:00: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments MSI HPX-Type3]");
  auto r3 = parse_kmsg_record(recs[3]);
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->level, 4);
  EXPECT_EQ(r3->seq, 432u);
  EXPECT_EQ(r3->message.rfind("BTRFS warning (device loop1): csum failed root 5 ino 257", 0), 0u);
  std::uint64_t prev = 0;
  for (const auto& rec : recs) {
    auto r = parse_kmsg_record(rec);
    ASSERT_TRUE(r) << rec;
    EXPECT_GT(r->seq, prev);
    EXPECT_EQ(r->message.find('\n'), std::string::npos);
    prev = r->seq;
  }
}

TEST(KmsgRecord, UnescapesAndRejectsGarbage) {
  auto r = parse_kmsg_record("11,7,99,c,more;a\\x09b\\x5cc\\xZZ\n SUBSYSTEM=block\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 1);
  EXPECT_EQ(r->level, 3);
  EXPECT_EQ(r->flags, 'c');
  EXPECT_EQ(r->message, "a\tb\\c\\xZZ");
  EXPECT_FALSE(parse_kmsg_record("no semicolon"));
  EXPECT_FALSE(parse_kmsg_record("x,1,2,-;msg"));
  EXPECT_FALSE(parse_kmsg_record("6,1;msg"));
}

TEST(KmsgSeq, ResumeSkipsCountedAndGapsAreLost) {
  SeqTracker t;
  t.reset(450, std::nullopt);  // restart after seq 450 was counted
  EXPECT_FALSE(t.accept(449));
  EXPECT_FALSE(t.accept(450));
  EXPECT_TRUE(t.accept(451));
  EXPECT_TRUE(t.accept(460));  // 452..459 overwritten (EPIPE) before we read them
  EXPECT_EQ(t.lost(), 8u);
  EXPECT_EQ(*t.last(), 460u);
  t.reset(std::nullopt, std::nullopt);  // first start at the end: whatever comes first is fine
  EXPECT_TRUE(t.accept(9000));
  EXPECT_EQ(t.lost(), 0u);
  t.reset(std::nullopt, 0);  // a new boot read from its start: the buffer already wrapped
  EXPECT_TRUE(t.accept(120));
  EXPECT_EQ(t.lost(), 120u);
}

TEST(KernelLogConfigSection, KeysDefaultsAndErrors) {
  auto d = config::parse_config("{}", "t.yaml").kernel_log;
  EXPECT_EQ(d.source, "auto");
  EXPECT_EQ(d.max_lines_per_run, 5000);
  EXPECT_EQ(d.state_file, "kernel_log.state.json");
  EXPECT_EQ(d.start_at, "end");
  auto c = config::parse_config(
      "kernel_log:\n  source: journal\n  max_lines_per_run: 100\n  state_file: kl.json\n  start_at: boot\n"
      "  journal_directory: /var/log/journal/abc\n",
      "t.yaml").kernel_log;
  EXPECT_EQ(c.source, "journal");
  EXPECT_EQ(c.max_lines_per_run, 100);
  EXPECT_EQ(c.state_file, "kl.json");
  EXPECT_EQ(c.start_at, "boot");
  EXPECT_EQ(c.journal_directory, "/var/log/journal/abc");
  auto error_of = [](const std::string& yaml) {
    try {
      config::parse_config(yaml, "t.yaml");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("kernel_log:\n  source: dmesg\n").find("kernel_log.source"), std::string::npos);
  EXPECT_NE(error_of("kernel_log:\n  max_lines_per_run: 0\n").find("max_lines_per_run"), std::string::npos);
  EXPECT_NE(error_of("kernel_log:\n  state_file: ../x\n").find("state_file"), std::string::npos);
  EXPECT_NE(error_of("kernel_log:\n  max_line_per_run: 5\n").find("max_lines_per_run"), std::string::npos);  // did you mean
}

TEST(KernelLogState, JsonRoundTrip) {
  WatcherState s;
  s.source = "kmsg";
  s.boot_id = "741a3aa8-f090-4118-81f8-e99fd9bb30fd";
  s.kmsg_seq = 450;
  s.errors[{"loop1", "btrfs", "checksum", "/mnt/a b"}] = 5;
  s.lines["kmsg"] = 1234;
  s.lost["kmsg"] = 7;
  s.last_event["checksum"] = 1764460000.5;
  s.btrfs_dev_stats[{"loop2", "/mnt/a b"}] = {0, 0, 0, 3, 0};
  s.add_recent(1764460000.5, "loop1", "/mnt/a b");
  auto back = WatcherState::from_json(s.to_json());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->to_json(), s.to_json());
  EXPECT_EQ(*back->kmsg_seq, 450u);
  EXPECT_FALSE(back->journal_cursor);
  EXPECT_EQ((back->errors[{"loop1", "btrfs", "checksum", "/mnt/a b"}]), 5u);
  ASSERT_EQ(back->recent.size(), 1u);
  EXPECT_EQ(back->recent[0].count, 1u);
  EXPECT_EQ(back->recent[0].minute, 1764459960.0);
  // A state file of an older fsaudit has no "recent": read as none.
  EXPECT_TRUE(WatcherState::from_json("{\"version\": 1, \"source\": \"kmsg\"}"));
  // A bucket of the wrong type is a bad state file, not a silent zero.
  EXPECT_FALSE(WatcherState::from_json("{\"version\": 1, \"recent\": [{\"minute\": \"x\", \"device\": \"a\", "
                                       "\"target\": \"\", \"count\": 1}]}"));
  EXPECT_FALSE(WatcherState::from_json("{\"version\": 2}"));
  EXPECT_FALSE(WatcherState::from_json("not json"));
}

// The last day's errors, per minute and (device, target): a storm is counted exactly in few buckets,
// the whole stays bounded, and a day later they are gone.
TEST(KernelLogState, RecentErrorsAreMinuteBucketsBoundedAndPruned) {
  WatcherState s;
  const double t0 = 1764460020;  // a minute's start
  for (int i = 0; i < 1000; ++i) s.add_recent(t0 + i * 0.05, "sdb", "/srv");  // 50 s of one device
  s.add_recent(t0 + 10, "sdc", "/srv");
  s.add_recent(t0 + 59.9, "sdb", "/srv");
  EXPECT_EQ(s.recent.size(), 2u);
  EXPECT_EQ(s.recent[0].count, 1001u);
  s.add_recent(t0 + 60, "sdb", "/srv");  // the next minute
  EXPECT_EQ(s.recent.size(), 3u);
  for (std::size_t i = 0; i < WatcherState::kRecentMax + 5; ++i) s.add_recent(t0 + 120 + 60.0 * i, "sdd", "");
  EXPECT_EQ(s.recent.size(), WatcherState::kRecentMax);
  EXPECT_EQ(s.recent.front().device, "sdd");  // the oldest went first
  s.prune_recent(t0 + 120 + 60.0 * (WatcherState::kRecentMax + 4) + 86400);
  ASSERT_EQ(s.recent.size(), 1u);  // only the newest minute is within a day
}

TEST(KernelLogSource, AutoPicksJournalOnlyWithSocketAndFiles) {
  testing::TempDir root("fsaudit-kl-src");
  auto host = HostPaths::under(root.path());
  config::KernelLogConfig cfg;
  EXPECT_EQ(pick_source(cfg, host), "kmsg");
  fs::create_directories(root / "run/systemd/journal");
  testing::write_text(root / "run/systemd/journal/socket", "");
  EXPECT_EQ(pick_source(cfg, host), "kmsg");  // journald socket but no journal files
  fs::create_directories(root / "var/log/journal/abc");
  testing::write_text(root / "var/log/journal/abc/system.journal", "");
  EXPECT_EQ(pick_source(cfg, host), "journal");
  cfg.source = "kmsg";
  EXPECT_EQ(pick_source(cfg, host), "kmsg");
  config::KernelLogConfig dir;
  dir.journal_directory = "/x";
  EXPECT_EQ(pick_source(dir, HostPaths::under(root / "nothing")), "journal");
}

// A fixture tree: sdb (disk) -> sdb1 (partition) -> dm-0 holder mounted on /data (ext4, 253:0);
// btrfs on loop1+loop2 mounted on /pool (anonymous dev 0:52, source /dev/loop1); sdc unrelated.
TEST(KernelLogAttribution, FollowsPartitionsHoldersAndBtrfsMembers) {
  testing::TempDir root("fsaudit-kl-attr");
  testing::write_text(root / "proc/self/mountinfo",
                      "22 1 253:0 / /data rw,relatime shared:1 - ext4 /dev/mapper/vg-data rw\n"
                      "23 1 0:52 / /pool rw,relatime shared:2 - btrfs /dev/loop1 rw,space_cache=v2\n"
                      "24 1 0:53 /sub /pool/sub rw shared:2 - btrfs /dev/loop1 rw\n"
                      "25 1 0:5 / /proc rw - proc proc rw\n");
  fs::create_directories(root / "sys/dev/block");
  fs::create_directory_symlink("../../devices/virtual/block/dm-0", root / "sys/dev/block/253:0");
  fs::create_directories(root / "sys/block/sdb/sdb1");
  fs::create_directories(root / "sys/class/block/sdb1/holders/dm-0");
  fs::create_directories(root / "sys/block/sdc/sdc1");
  fs::create_directories(root / "sys/fs/btrfs/aa2bb02b/devices/loop1");
  fs::create_directories(root / "sys/fs/btrfs/aa2bb02b/devices/loop2");
  fs::create_directories(root / "dev/mapper");
  testing::write_text(root / "dev/dm-0", "");
  fs::create_symlink("../dm-0", root / "dev/mapper/vg-data");
  TargetResolver r(HostPaths::under(root.path()));
  EXPECT_EQ(r.target_of("dm-0"), "/data");
  EXPECT_EQ(r.target_of("/dev/mapper/vg-data"), "/data");
  EXPECT_EQ(r.target_of("sdb1"), "/data");  // partition held by dm-0
  EXPECT_EQ(r.target_of("sdb"), "/data");   // whole disk -> sdb1 -> dm-0
  EXPECT_EQ(r.target_of("loop1"), "/pool");
  EXPECT_EQ(r.target_of("loop2"), "/pool");  // second btrfs member, not in mountinfo
  EXPECT_EQ(r.target_of("sdc"), "");
  EXPECT_EQ(r.target_of("fsauditX123"), "");
  EXPECT_EQ(r.target_of(""), "");
}

}  // namespace
}  // namespace fsaudit::kernel_log
