// Lab tests of the kernel log watcher against the real kernel: /dev/kmsg, a real btrfs raid1 on loop
// devices, a real ext4 error, a private journald namespace, and the running daemon's /metrics.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/kernel_log/probe.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/journald.hpp"
#include "tests/support/kernel_log.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit::kernel_log {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::unique_name;

using testing::write_kmsg;

using Harness = testing::HostProbeHarness;

double errors(const ProbeResult& r, const std::map<std::string, std::string>& labels) {
  double v = r.metrics.value("fsaudit_kernel_errors_total", labels);
  return std::isnan(v) ? 0 : v;
}

config::KernelLogConfig kmsg_config() {
  config::KernelLogConfig c;
  c.source = "kmsg";
  return c;
}

TEST(KernelLogLab, KmsgMarkedLineCountedOnceAndNotAgainAfterRestart) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-kl-lab");
  Harness h(dir / "state");
  const std::string dev = unique_name("fsauditX");
  const std::map<std::string, std::string> csum{{"device", dev}, {"kind", "checksum"}, {"fs", "btrfs"}};
  {
    KernelLogProbe p(kmsg_config());
    auto r = h.run(p);  // first start: positioned at the current end, nothing replayed
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_kernel_log_source_info", {{"source", "kmsg"}}), 1);
    write_kmsg("<4>BTRFS warning (device " + dev + "): csum failed root 5 ino 257 off 0 csum 0x89f52ec6 expected csum 0xef48a15b mirror 1\n");
    write_kmsg("<3>BTRFS error (device " + dev + "): bdev /dev/" + dev + " errs: wr 0, rd 0, flush 0, corrupt 7, gen 0\n");
    r = h.run_until(p, [&](const ProbeResult& x) { return errors(x, csum) >= 1; });
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, csum), 1);
    EXPECT_EQ(r.metrics.value("fsaudit_kernel_errors_total", {{"device", dev}, {"kind", "checksum"}, {"target", ""}}), 1);
    // The bdev line is the kernel's cumulative counter, not a second event.
    EXPECT_FALSE(r.metrics.has("fsaudit_kernel_errors_total", {{"device", dev}, {"kind", "device_stats"}}));
    EXPECT_EQ(r.metrics.value("fsaudit_kernel_btrfs_reported_device_errors", {{"device", dev}, {"counter", "corruption"}}), 7);
    EXPECT_GE(r.metrics.value("fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}), 2);
    r = h.run(p);
    EXPECT_EQ(errors(r, csum), 1) << "a second run must not count the same line again";
  }
  ASSERT_TRUE(fs::exists(h.state_dir / "kernel_log.state.json"));
  {
    KernelLogProbe again(kmsg_config());  // a restart: resumes after the saved kmsg sequence number
    auto r = h.run(again);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, csum), 1) << "restart re-counted the line";
    write_kmsg("<3>BTRFS error (device " + dev + "): unable to fixup (regular) error at logical 88145920 on dev /dev/" + dev + " physical 1\n");
    r = h.run_until(again, [&](const ProbeResult& x) {
      return errors(x, {{"device", dev}, {"kind", "unrepairable"}}) >= 1;
    });
    EXPECT_EQ(errors(r, {{"device", dev}, {"kind", "unrepairable"}}), 1);
    EXPECT_EQ(errors(r, csum), 1);
  }
}

TEST(KernelLogLab, KmsgBoundedLinesPerRun) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-kl-lab");
  Harness h(dir / "state");
  auto cfg = kmsg_config();
  cfg.max_lines_per_run = 10;
  KernelLogProbe p(cfg);
  ASSERT_EQ(h.run(p).outcome, Outcome::ok);
  const std::string dev = unique_name("fsauditB");
  for (int i = 0; i < 30; ++i) write_kmsg("<6>fsaudit kernel_log burst test " + dev + " line " + std::to_string(i) + "\n");
  write_kmsg("<3>EXT4-fs error (device " + dev + "): ext4_lookup:1707: inode #149495: comm test: iget: checksum invalid\n");
  auto r = h.run(p);
  EXPECT_LE(r.metrics.value("fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}), 10);
  EXPECT_EQ(errors(r, {{"device", dev}}), 0);  // not reached yet: it waits for the next runs
  r = h.run_until(p, [&](const ProbeResult& x) { return errors(x, {{"device", dev}}) >= 1; });
  EXPECT_EQ(errors(r, {{"device", dev}, {"kind", "fs_error"}, {"fs", "ext4"}}), 1);
  EXPECT_GE(r.metrics.value("fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}), 31);
  EXPECT_EQ(r.metrics.value("fsaudit_kernel_log_lost_messages_total", {{"source", "kmsg"}}), 0);
}

// A run that counts a storage error tells the daemon the mount table may be stale (the kernel may have
// turned that filesystem read-only without announcing it); runs that count none do not.
TEST(KernelLogLab, ARunThatCountsAnErrorSaysTheMountTableMayBeStale) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-kl-lab");
  Harness h(dir / "state");
  KernelLogProbe p(kmsg_config());
  ASSERT_EQ(h.run(p).outcome, Outcome::ok);
  const std::string dev = unique_name("fsauditM");
  write_kmsg("<6>fsaudit kernel_log info line " + dev + "\n");
  auto r = h.run_until(p, [&](const ProbeResult& x) {
    return x.metrics.value("fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}) >= 1;
  });
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.mount_table_stale) << "an info line is no storage error";
  write_kmsg("<3>EXT4-fs error (device " + dev + "): ext4_lookup:1707: inode #2: comm t: iget: checksum invalid\n");
  bool stale = false;
  r = h.run_until(p, [&](const ProbeResult& x) {
    stale = stale || x.mount_table_stale;
    return errors(x, {{"device", dev}}) >= 1;
  });
  EXPECT_EQ(errors(r, {{"device", dev}, {"kind", "fs_error"}}), 1);
  EXPECT_TRUE(stale);
  EXPECT_FALSE(h.run(p).mount_table_stale) << "the next run counted nothing new";
}

// start_at: boot reads the messages of this boot already in the buffer; a state file from another boot
// (a reboot while fsauditd was down) makes it read the new boot from its start, not from the end.
TEST(KernelLogLab, KmsgStartAtBootAndRebootReadWholeBuffer) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  const std::string dev = unique_name("fsauditR");
  write_kmsg("<3>EXT4-fs error (device " + dev + "): ext4_lookup:1707: inode #2: comm t: iget: checksum invalid\n");
  const std::map<std::string, std::string> want{{"device", dev}, {"kind", "fs_error"}};
  {
    TempDir dir("fsaudit-kl-lab");
    Harness h(dir / "state");
    auto cfg = kmsg_config();
    cfg.max_lines_per_run = 1'000'000;
    KernelLogProbe end_probe(cfg);  // default start_at: end -> the earlier line is history
    EXPECT_EQ(errors(h.run(end_probe), want), 0);
  }
  {
    TempDir dir("fsaudit-kl-lab");
    Harness h(dir / "state");
    auto cfg = kmsg_config();
    cfg.start_at = "boot";
    cfg.max_lines_per_run = 1'000'000;
    KernelLogProbe p(cfg);
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, want), 1);
  }
  {
    TempDir dir("fsaudit-kl-lab");
    Harness h(dir / "state");
    WatcherState old;
    old.source = "kmsg";
    old.boot_id = "00000000-0000-0000-0000-000000000000";  // another boot
    old.kmsg_seq = 999'999'999;
    old.errors[{"sdz", "block", "io", ""}] = 3;  // counters of earlier boots are kept
    fs::create_directories(h.state_dir);
    ASSERT_TRUE(write_file_atomic(h.state_dir / "kernel_log.state.json", old.to_json()));
    auto cfg = kmsg_config();
    cfg.max_lines_per_run = 1'000'000;
    KernelLogProbe p(cfg);
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, want), 1) << "after a reboot the new boot's buffer is read from its start";
    EXPECT_EQ(errors(r, {{"device", "sdz"}, {"kind", "io"}}), 3);
  }
}

// The btrfs raid1 case, for real: one copy of a file block is overwritten on the raw loop device
// and scrubbed (repaired), then both copies are overwritten and the file is read (csum failed, EIO).
// Every event is attributed to the mount point.
TEST(KernelLogLab, RealBtrfsRaid1CsumFailuresAttributedToTarget) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-kl-btrfs");
  testing::LoopDevice a(dir.path(), "a.img", 128ull << 20), b(dir.path(), "b.img", 128ull << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  testing::must({"mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", a.device(), b.device()});
  const fs::path mnt = dir / "mnt";
  Harness h(dir / "state");
  KernelLogProbe p(kmsg_config());
  ASSERT_EQ(h.run(p).outcome, Outcome::ok);
  const std::string pattern = unique_name("FSAUDITKLPATTERN");
  {
    testing::Mount m(a.device(), mnt, "btrfs");
    ASSERT_TRUE(m.ok()) << m.error();
    std::string data;
    for (int i = 0; data.size() < 65536; ++i) data += pattern + std::to_string(i % 10);
    testing::write_text(mnt / "victim", data);
    testing::must({"sync"});
  }
  auto overwrite = [&](const fs::path& img, char c) {
    auto g = testing::run({"grep", "-a", "-b", "-o", "-m", "1", "-F", pattern + "0", img.string()});
    ASSERT_TRUE(g.ok()) << "pattern not found in " << img;
    auto off = parse_u64(g.out.substr(0, g.out.find(':')));
    ASSERT_TRUE(off);
    std::fstream f(img, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(*off));
    std::string junk(40, c);
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  };
  overwrite(a.backing(), 'X');
  const std::string adev = fs::path(a.device()).filename(), bdev = fs::path(b.device()).filename();
  ProbeResult r;
  {
    // The probe runs while the filesystem is mounted: attribution maps devices to mounted targets.
    testing::Mount m(a.device(), mnt, "btrfs");
    ASSERT_TRUE(m.ok()) << m.error();
    testing::run({"btrfs", "scrub", "start", "-B", mnt.string()});
    r = h.run_until(p, [&](const ProbeResult& x) { return errors(x, {{"kind", "repaired"}, {"device", adev}}) >= 1; });
  }
  EXPECT_GE(errors(r, {{"kind", "repaired"}, {"device", adev}, {"fs", "btrfs"}, {"target", mnt.string()}}), 1)
      << "scrub's fixed-up error on " << adev << "\n" << r.reason;
  overwrite(a.backing(), 'Y');
  overwrite(b.backing(), 'Z');
  {
    testing::Mount m(a.device(), mnt, "btrfs");
    ASSERT_TRUE(m.ok()) << m.error();
    auto c = testing::run({"cat", (mnt / "victim").string()});
    EXPECT_FALSE(c.ok()) << "reading a block whose both copies are bad must fail with EIO";
    r = h.run_until(p, [&](const ProbeResult& x) { return errors(x, {{"kind", "checksum"}, {"target", mnt.string()}}) >= 2; });
  }
  // "csum failed ... mirror 1" and "... mirror 2" name the filesystem's device (the first member).
  EXPECT_GE(errors(r, {{"kind", "checksum"}, {"fs", "btrfs"}, {"target", mnt.string()}}), 2);
  EXPECT_GE(r.metrics.value("fsaudit_kernel_btrfs_reported_device_errors",
                            {{"device", bdev}, {"counter", "corruption"}, {"target", mnt.string()}}),
            1);
}

TEST(KernelLogLab, RealExt4ErrorAttributedToTarget) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-kl-ext4");
  testing::LoopDevice loop(dir.path(), "ext4.img", 32 << 20);
  ASSERT_TRUE(loop.ok());
  testing::must({"mkfs.ext4", "-q", "-F", loop.device()});
  testing::Mount m(loop.device(), dir / "mnt", "ext4", "errors=continue");
  ASSERT_TRUE(m.ok()) << m.error();
  const std::string dev = fs::path(loop.device()).filename();
  auto trigger = fs::path("/sys/fs/ext4") / dev / "trigger_fs_error";
  FSAUDIT_LAB_NEEDS(testing::lab_path_missing(trigger, "ext4's trigger_fs_error (Linux >= 5.18)"));
  Harness h(dir / "state");
  KernelLogProbe p(kmsg_config());
  ASSERT_EQ(h.run(p).outcome, Outcome::ok);
  {
    std::ofstream f(trigger);
    f << "fsaudit kernel_log lab test\n";
  }
  const std::map<std::string, std::string> want{
      {"device", dev}, {"fs", "ext4"}, {"kind", "fs_error"}, {"target", (dir / "mnt").string()}};
  auto r = h.run_until(p, [&](const ProbeResult& x) { return errors(x, want) >= 1; });
  EXPECT_EQ(errors(r, want), 1);
}

using testing::PrivateJournald;

TEST(KernelLogLab, PrivateJournaldThroughSdJournal) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_path_missing("/lib/systemd/systemd-journald", "systemd-journald (apt-get install systemd)"));
  PrivateJournald jd("fsaudit-kl-");
  ASSERT_TRUE(jd.ok()) << "private journald did not create " << jd.journal_dir();
  TempDir dir("fsaudit-kl-journal");
  Harness h(dir / "state");
  config::KernelLogConfig cfg;  // source auto + journal_directory -> journal
  cfg.journal_directory = jd.journal_dir().string();
  const std::string dev = unique_name("fsauditJ");
  const std::map<std::string, std::string> want{{"device", dev}, {"kind", "metadata_corruption"}, {"fs", "xfs"}};
  {
    KernelLogProbe p(cfg);
    auto r = h.run(p);  // first start: the journal's current end
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    ASSERT_EQ(r.metrics.value("fsaudit_kernel_log_source_info", {{"source", "journal"}}), 1);
    write_kmsg("<2>XFS (" + dev + "): Metadata corruption detected at xfs_sb_read_verify+0x157/0x170, xfs_sb block 0x0\n");
    r = h.run_until(p, [&](const ProbeResult& x) { return errors(x, want) >= 1; });
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, want), 1) << "journald running: " << jd.running();
    EXPECT_GE(r.metrics.value("fsaudit_kernel_log_lines_total", {{"source", "journal"}}), 1);
    EXPECT_GT(r.metrics.value("fsaudit_kernel_log_last_event_timestamp_seconds", {{"kind", "metadata_corruption"}}),
              1.7e9);
  }
  auto saved = read_file(h.state_dir / "kernel_log.state.json");
  ASSERT_TRUE(saved);
  EXPECT_NE(saved->find("\"journal_cursor\""), std::string::npos);
  {
    KernelLogProbe again(cfg);  // restart: resumes at the saved cursor
    auto r = h.run(again);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, want), 1) << "restart re-counted the journal entry";
    write_kmsg("<2>XFS (" + dev + "): Corruption of in-memory data detected.  Shutting down filesystem\n");
    r = h.run_until(again, [&](const ProbeResult& x) { return errors(x, {{"device", dev}, {"kind", "shutdown"}}) >= 1; });
    EXPECT_EQ(errors(r, {{"device", dev}, {"kind", "shutdown"}}), 1);
    EXPECT_EQ(errors(r, want), 1);
  }
  {
    TempDir fresh("fsaudit-kl-journal");
    Harness h2(fresh / "state");
    auto boot_cfg = cfg;
    boot_cfg.start_at = "boot";  // no state: this boot's entries, both lines above
    boot_cfg.max_lines_per_run = 1'000'000;
    KernelLogProbe p(boot_cfg);
    auto r = h2.run(p);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, want), 1);
    EXPECT_EQ(errors(r, {{"device", dev}, {"kind", "shutdown"}}), 1);
  }
}

TEST(KernelLogLab, DaemonScrapeShowsMarkedKmsgLine) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-kl-daemon");
  int port = testing::free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                     "\ntargets:\n  discover: false\nprobes:\n  kernel_log: {interval: 1s, jitter: 0s}\n"
                     "kernel_log:\n  source: kmsg\n  max_lines_per_run: 2000\n";
  const std::string dev = unique_name("fsauditD");
  const std::map<std::string, std::string> want{{"device", dev}, {"kind", "io"}, {"fs", "block"}};
  {
    testing::DaemonProcess d(dir.path(), yaml, port);
    auto text = d.wait_for_metric("fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}, 30);
    ASSERT_FALSE(std::isnan(testing::scrape_value(text, "fsaudit_kernel_log_lines_total", {{"source", "kmsg"}})))
        << d.log();
    write_kmsg("<3>I/O error, dev " + dev + ", sector 2048 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2\n");
    text = d.wait_for([&](const std::string& s) { return testing::scrape_value(s, "fsaudit_kernel_errors_total", want) >= 1; }, 20);
    EXPECT_EQ(testing::scrape_value(text, "fsaudit_kernel_errors_total", want), 1)
        << testing::scrape_lines(text, "fsaudit_kernel_errors_total") << d.log();
    EXPECT_EQ(d.stop(10), 0);
  }
  {
    testing::DaemonProcess d(dir.path(), yaml, port);  // restart: the counter comes back, not doubled
    auto text = d.wait_for_metric("fsaudit_kernel_errors_total", want, 30);
    testing::DaemonProcess::sleep_ms(2500);  // a few more runs of the 1 s probe
    text = d.scrape();
    EXPECT_EQ(testing::scrape_value(text, "fsaudit_kernel_errors_total", want), 1) << d.log();
    // ... and so does the status page's "in the last hour" for the device, although the line itself
    // is never read again (the watcher resumes after it).
    auto st = testing::run({"curl", "-sS", "--max-time", "10", "http://127.0.0.1:" + std::to_string(port) + "/api/v1/status"}, 20);
    ASSERT_TRUE(st.ok()) << st.err;
    auto j = nlohmann::json::parse(st.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << st.out;
    bool found = false;
    for (const auto& k : j["kernel_errors"])
      if (k["device"] == dev) {
        found = true;
        EXPECT_EQ(k["last_hour"], 1) << k.dump();
        EXPECT_EQ(k["last_day"], 1) << k.dump();
      }
    EXPECT_TRUE(found) << j["kernel_errors"].dump(1) << d.log();
    EXPECT_EQ(d.stop(10), 0);
  }
}

}  // namespace
}  // namespace fsaudit::kernel_log
