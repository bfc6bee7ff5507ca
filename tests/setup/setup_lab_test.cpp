// Setup findings on real stacks (loop devices, kernel btrfs/XFS/ext4, zfs-fuse): each stack shows its
// findings, a btrfs raid1 none. Facts are gathered by the real adapter from this host's mountinfo,
// sysfs and tools, exactly as the probe does.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <random>

#include <set>
#include <thread>

#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/setup/probe.hpp"
#include "probes/setup/coverage.hpp"
#include "probes/setup/gather.hpp"
#include "probes/setup/rules.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit::setup {
namespace {

namespace fs = std::filesystem;
using testing::must;

// Facts of the filesystem mounted at `mnt`, as the probe gathers them.
StackFacts facts_at(const fs::path& mnt, const config::SetupConfig& cfg) {
  auto text = read_file("/proc/self/mountinfo");
  EXPECT_TRUE(text.ok());
  auto mounts = parse_mountinfo(*text);
  EXPECT_TRUE(mounts.ok());
  const MountEntry* m = nullptr;
  for (const auto& e : *mounts)
    if (e.mountpoint == mnt.string()) m = &e;
  EXPECT_NE(m, nullptr) << mnt << " not in mountinfo";
  if (!m) return {};
  static HostPaths host;
  static ProcessRunner runner;
  static ToolPaths tools;
  GatherEnv env(host, runner, tools, cfg, "/nonexistent-fsaudit-state", *mounts, static_cast<double>(::time(nullptr)));
  Target t{m->mountpoint, m->mountpoint, m->fstype, m->source, m->mount_options, m->super_options, m->major, m->minor};
  return gather_facts(t, env);
}

std::set<std::string> fired(const StackFacts& f, const config::SetupConfig& cfg, std::string* evidence = nullptr) {
  std::set<std::string> s;
  for (const auto& x : evaluate(f, cfg).findings) {
    s.insert(x.rule);
    if (evidence) *evidence += x.rule + ": " + x.evidence + "\n";
  }
  return s;
}

std::string problems(const StackFacts& f) {
  std::string s;
  for (const auto& p : f.problems) s += p + "; ";
  return s;
}

TEST(SetupLab, BtrfsMountedNodatasumWithANocowDirectory) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-setup-lab");
  testing::LoopDevice a(dir.path(), "a.img", 256ull << 20);
  ASSERT_TRUE(a.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "single", "-m", "dup", a.device()});
  testing::Mount m(a.device(), dir / "mnt", "btrfs", "nodatasum");
  ASSERT_TRUE(m.ok()) << m.error();
  fs::create_directories(dir / "mnt/vm");
  must({"chattr", "+C", (dir / "mnt/vm").string()});
  config::SetupConfig cfg;
  auto f = facts_at(dir / "mnt", cfg);
  std::string ev;
  auto got = fired(f, cfg, &ev);
  EXPECT_TRUE(got.count("btrfs_nodatasum")) << ev << problems(f);
  EXPECT_TRUE(got.count("btrfs_nocow_files")) << ev << problems(f);
  EXPECT_NE(ev.find((dir / "mnt/vm").string()), std::string::npos) << ev;
  EXPECT_TRUE(got.count("not_repairable")) << ev;          // data single
  EXPECT_FALSE(got.count("metadata_not_duplicated")) << ev;  // metadata dup
  EXPECT_EQ(stack_signature(f)["data_checksums"], "off");
}

TEST(SetupLab, BtrfsTwoDevicesDataSingle) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-setup-lab");
  testing::LoopDevice a(dir.path(), "a.img", 256ull << 20), b(dir.path(), "b.img", 256ull << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "single", "-m", "raid1", a.device(), b.device()});
  testing::Mount m(a.device(), dir / "mnt", "btrfs");
  ASSERT_TRUE(m.ok()) << m.error();
  config::SetupConfig cfg;
  auto f = facts_at(dir / "mnt", cfg);
  std::string ev;
  auto got = fired(f, cfg, &ev);
  EXPECT_TRUE(got.count("not_repairable")) << ev << problems(f);
  EXPECT_FALSE(got.count("btrfs_nodatasum")) << ev;
  EXPECT_FALSE(got.count("metadata_not_duplicated")) << ev;
  EXPECT_EQ(f.devices.size(), 2u) << problems(f);
  EXPECT_EQ(stack_signature(f)["redundancy"], "single");
}

TEST(SetupLab, BtrfsRaid1HasNoFinding) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-setup-lab");
  testing::LoopDevice a(dir.path(), "a.img", 256ull << 20), b(dir.path(), "b.img", 256ull << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", a.device(), b.device()});
  testing::Mount m(a.device(), dir / "mnt", "btrfs");
  ASSERT_TRUE(m.ok()) << m.error();
  fs::create_directories(dir / "mnt/data/sub");
  testing::write_text(dir / "mnt/data/sub/file", "hello");
  config::SetupConfig cfg;
  auto f = facts_at(dir / "mnt", cfg);
  ASSERT_TRUE(f.btrfs) << problems(f);
  ASSERT_TRUE(f.btrfs->nocow);
  EXPECT_GE(f.btrfs->nocow->examined, 3u);
  std::string ev;
  auto got = fired(f, cfg, &ev);
  EXPECT_TRUE(got.empty()) << ev;
  auto sig = stack_signature(f);
  EXPECT_EQ(sig["redundancy"], "raid1");
  EXPECT_EQ(sig["data_checksums"], "on");
  EXPECT_EQ(sig["device_transport"], "loop");
}

TEST(SetupLab, XfsOnALoopDevice) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-setup-lab");
  testing::LoopDevice a(dir.path(), "x.img", 320ull << 20);
  ASSERT_TRUE(a.ok());
  must({"mkfs.xfs", "-q", "-f", a.device()});
  testing::Mount m(a.device(), dir / "mnt", "xfs");
  ASSERT_TRUE(m.ok()) << m.error();
  config::SetupConfig cfg;
  auto f = facts_at(dir / "mnt", cfg);
  std::string ev;
  auto got = fired(f, cfg, &ev);
  EXPECT_EQ(got, std::set<std::string>{"no_data_checksums"}) << ev << problems(f);
  ASSERT_EQ(f.devices.size(), 1u) << problems(f);
  EXPECT_EQ(f.devices[0].transport, "loop");
  EXPECT_FALSE(f.devices[0].loop_backing_file.empty());
  EXPECT_EQ(stack_signature(f)["redundancy"], "plain");
}

TEST(SetupLab, ZfsFusePoolOnFilesOnExt4WithChecksumOff) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  testing::TempDir dir("fsaudit-setup-lab");
  testing::LoopDevice e(dir.path(), "e.img", 300ull << 20);
  ASSERT_TRUE(e.ok());
  must({"mkfs.ext4", "-q", "-F", e.device()});
  testing::Mount ext4(e.device(), dir / "ext4", "ext4");
  ASSERT_TRUE(ext4.ok()) << ext4.error();
  auto v1 = dir / "ext4/v1", v2 = dir / "ext4/v2";
  must({"truncate", "-s", "100M", v1.string(), v2.string()});
  testing::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  std::string pool = "fsauditsetup" + std::to_string(::getpid());
  testing::ZfsPool p(pool, {"mirror", v1.string(), v2.string()});
  ASSERT_TRUE(p.ok()) << p.error();
  must({"zfs", "create", pool + "/vm"});
  must({"zfs", "set", "checksum=off", pool + "/vm"});
  fs::path mnt = "/" + pool + "/vm";
  for (int i = 0; i < 50; ++i) {  // zfs-fuse mounts asynchronously
    auto t = read_file("/proc/self/mountinfo");
    if (t.ok() && t->find(" " + mnt.string() + " ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  config::SetupConfig cfg;
  auto f = facts_at(mnt, cfg);
  EXPECT_EQ(f.fs, "zfs");
  std::string ev;
  auto got = fired(f, cfg, &ev);
  EXPECT_TRUE(got.count("zfs_checksum_off")) << ev << problems(f);
  EXPECT_TRUE(got.count("zfs_stacked_vdev")) << ev << problems(f);
  EXPECT_NE(ev.find("on ext4"), std::string::npos) << ev;
  EXPECT_FALSE(got.count("not_repairable")) << ev;  // a mirror
  // zfs-fuse (pool v23) has no autotrim and ashift 0: not evaluable, never a finding.
  EXPECT_FALSE(got.count("zfs_autotrim_off"));
  EXPECT_FALSE(got.count("zfs_ashift_too_small"));
  std::set<std::string> ne;
  for (const auto& n : evaluate(f, cfg).not_evaluable) ne.insert(n.rule);
  EXPECT_TRUE(ne.count("zfs_autotrim_off"));
  EXPECT_TRUE(ne.count("zfs_ashift_too_small"));
  auto sig = stack_signature(f);
  EXPECT_EQ(sig["data_checksums"], "off");
  EXPECT_EQ(sig["redundancy"], "mirror");
  // The pool's root dataset keeps checksums: only the stacked-pool finding.
  auto root = facts_at("/" + pool, cfg);
  auto got_root = fired(root, cfg);
  EXPECT_FALSE(got_root.count("zfs_checksum_off"));
  EXPECT_TRUE(got_root.count("zfs_stacked_vdev"));
}


// A production XFS is uncovered until a real XFS canary on its own loop device has met its
// expectation (silent: known blind); then the probe reports it covered and the host's ratio is 1.
TEST(SetupLab, RealXfsCanaryCoversAnXfsTarget) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-setup-lab");
  testing::LoopDevice prod(dir.path(), "prod.img", 320ull << 20), can(dir.path(), "canary.img", 320ull << 20);
  ASSERT_TRUE(prod.ok() && can.ok());
  must({"mkfs.xfs", "-q", "-f", prod.device()});
  must({"mkfs.xfs", "-q", "-f", can.device()});
  testing::Mount pm(prod.device(), dir / "prod", "xfs");
  testing::Mount cm(can.device(), dir / "canary", "xfs");
  ASSERT_TRUE(pm.ok() && cm.ok()) << pm.error() << cm.error();
  auto cfg = config::parse_config("state_dir: " + (dir / "state").string() + "\ntargets: {include: [\"" +
                                      (dir / "prod").string() + "\"]}\ncanary:\n  canaries:\n    - name: xfs-blind\n" +
                                      "      fs: xfs\n      layout: plain\n      devices: [" + can.device() +
                                      "]\n      mountpoint: " + (dir / "canary").string() + "\n",
                                  "lab.yaml");
  std::vector<FindingEvent> events;
  SetupProbe probe(cfg, [&](const FindingEvent& e) { events.push_back(e); });
  ProcessRunner runner;
  ProbeContext ctx{cfg.host, runner, SystemClock::instance(), cfg.tools, cfg.state_dir, {},
                   std::chrono::steady_clock::now() + std::chrono::seconds(60)};
  auto before = probe.run(Target::host(), ctx);
  ASSERT_EQ(before.outcome, Outcome::ok) << before.reason;
  metrics::Labels prod_l{{"target", (dir / "prod").string()}};
  EXPECT_EQ(before.metrics.value("fsaudit_detection_covered", prod_l), 0);
  EXPECT_EQ(before.metrics.value("fsaudit_detection_coverage_ratio"), 0);
  EXPECT_EQ(before.metrics.value("fsaudit_setup_finding", {{"target", (dir / "prod").string()}, {"rule", "no_data_checksums"}}), 1);
  ASSERT_EQ(events.size(), 1u);  // no_data_checksums appeared (the canary itself is not production)
  EXPECT_EQ(before.metrics.value("fsaudit_canary_stack_info", {{"canary", "xfs-blind"}, {"redundancy", "plain"},
                                                              {"device_transport", "loop"}}), 1);

  auto init = canary::init_canary(cfg, "xfs-blind", runner);
  ASSERT_TRUE(init.ok()) << init.error();
  canary::CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
  auto rep = canary::run_cycle(cfg.canary, "xfs-blind", env);
  canary::record_cycle(cfg.state_dir, rep);
  ASSERT_TRUE(rep.expectation_met) << rep.to_json();

  auto after = probe.run(Target::host(), ctx);
  ASSERT_EQ(after.outcome, Outcome::ok) << after.reason;
  EXPECT_EQ(after.metrics.value("fsaudit_detection_covered", prod_l), 1);
  EXPECT_EQ(after.metrics.value("fsaudit_detection_coverage_ratio"), 1);
  EXPECT_GT(after.metrics.value("fsaudit_detection_covered_bytes"), 200e6);  // statvfs size of 320 MiB XFS
  EXPECT_EQ(after.metrics.value("fsaudit_detection_covered_bytes"), after.metrics.value("fsaudit_detection_production_bytes"));
}

// The real journald path: a private systemd-journald (journal namespace) receives the record that
// journal_finding() sends. sd_journal_send() always writes to /run/systemd/journal/socket, so the
// sender runs in a child with a private mount namespace where that socket is the namespace's.
TEST(SetupLab, FindingRecordReachesJournald) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  if (!fs::exists("/lib/systemd/systemd-journald")) GTEST_SKIP() << "systemd-journald not installed";
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  std::string ns = std::string("fsaudit-setup-") + buf;
  std::string mid;
  if (auto t = read_file("/etc/machine-id")) mid = std::string(t->substr(0, t->find('\n')));
  fs::path conf = "/etc/systemd/journald@" + ns + ".conf", jdir = "/var/log/journal/" + mid + "." + ns,
           rdir = "/run/systemd/journal." + ns;
  testing::write_text(conf, "[Journal]\nStorage=persistent\n");
  pid_t jd = ::fork();
  if (jd == 0) {
    ::setpgid(0, 0);
    ::unsetenv("NOTIFY_SOCKET");
    ::execl("/lib/systemd/systemd-journald", "systemd-journald", ns.c_str(), nullptr);
    ::_exit(127);
  }
  struct Cleanup {
    pid_t pid;
    fs::path conf, jdir, rdir;
    ~Cleanup() {
      ::kill(pid, SIGTERM);
      int st = 0;
      for (int i = 0; i < 100 && ::waitpid(pid, &st, WNOHANG) == 0; ++i) ::usleep(50'000);
      if (::waitpid(pid, &st, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
      }
      std::error_code ec;
      fs::remove(conf, ec);
      fs::remove_all(jdir, ec);
      fs::remove_all(rdir, ec);
    }
  } cleanup{jd, conf, jdir, rdir};
  for (int i = 0; i < 100 && !fs::exists(rdir / "socket"); ++i) ::usleep(50'000);
  ASSERT_TRUE(fs::exists(rdir / "socket")) << "private journald did not start";

  testing::TempDir tmp("fsaudit-setup-journal");
  FindingEvent e{"/srv/" + ns, "btrfs_nodatasum", "critical", "mounted with nodatasum", "why", "fix", true};
  pid_t sender = ::fork();
  if (sender == 0) {
    // Private mount namespace: nothing here is visible to the host.
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(10);
    if (::mount(rdir.c_str(), tmp.path().c_str(), nullptr, MS_BIND, nullptr) != 0) ::_exit(11);
    if (::mount("tmpfs", "/run/systemd", "tmpfs", 0, nullptr) != 0) ::_exit(12);
    ::mkdir("/run/systemd/journal", 0755);
    if (::mount(tmp.path().c_str(), "/run/systemd/journal", nullptr, MS_BIND, nullptr) != 0) ::_exit(13);
    journal_finding(e);
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(sender, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "sender exit " << WEXITSTATUS(st);

  bool found = false;
  std::string fields;
  for (int attempt = 0; attempt < 50 && !found; ++attempt) {
    ::usleep(100'000);
    sd_journal* j = nullptr;
    if (sd_journal_open_namespace(&j, ns.c_str(), SD_JOURNAL_LOCAL_ONLY) < 0) continue;
    sd_journal_add_match(j, (std::string("MESSAGE_ID=") + kFindingMessageId).c_str(), 0);
    SD_JOURNAL_FOREACH(j) {
      const void* d;
      size_t l;
      if (sd_journal_get_data(j, "FSAUDIT_TARGET", &d, &l) >= 0 &&
          std::string(static_cast<const char*>(d), l) == "FSAUDIT_TARGET=" + e.target) {
        found = true;
        for (const char* f : {"FSAUDIT_RULE", "FSAUDIT_STATE", "FSAUDIT_SEVERITY", "PRIORITY"})
          if (sd_journal_get_data(j, f, &d, &l) >= 0) fields += std::string(static_cast<const char*>(d), l) + " ";
      }
    }
    sd_journal_close(j);
  }
  ASSERT_TRUE(found) << "no record with MESSAGE_ID=" << kFindingMessageId << " in journal namespace " << ns;
  EXPECT_NE(fields.find("FSAUDIT_RULE=btrfs_nodatasum"), std::string::npos) << fields;
  EXPECT_NE(fields.find("FSAUDIT_STATE=appeared"), std::string::npos) << fields;
  EXPECT_NE(fields.find("PRIORITY=3"), std::string::npos) << fields;
}

}  // namespace
}  // namespace fsaudit::setup
