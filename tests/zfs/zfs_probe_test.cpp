// The zfs probe adapter: format detection and caching, not_applicable, failures and timeouts.
// Uses a scripted CommandRunner (replaying the real captured outputs) and fake `zpool` scripts run
// through the real ProcessRunner.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include "daemon/core/clock.hpp"
#include "probes/zfs/probe.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::zfs {
namespace {

using namespace std::chrono_literals;

std::string local_data(const std::string& name) {
  std::ifstream f(std::string(FSAUDIT_TEST_DATA_DIR) + "/zfs/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::string out, line;
  while (std::getline(f, line))
    if (!line.starts_with("# source:")) out += line + "\n";
  return out;
}

using ScriptedRunner = testing::FakeRunner;

CommandResult exited(int code, std::string out, std::string err = "") {
  return testing::FakeRunner::exited(code, std::move(out), std::move(err));
}

struct Ctx {
  HostPaths host;
  SystemClock clock;
  ToolPaths tools;
  std::stop_source stop;
  ProbeContext make(CommandRunner& r, std::chrono::milliseconds budget = 5s) {
    return ProbeContext{host, r, clock, tools, std::filesystem::temp_directory_path(), stop.get_token(),
                        clock.now() + budget};
  }
};

// A zfs-fuse-like zpool replaying what the real one printed here (exit 2 + the captured stderr
// for -j, -p and the fragmentation column).
CommandResult zfs_fuse_like(const std::vector<std::string>& argv) {
  auto has = [&](const std::string& a) { return std::find(argv.begin(), argv.end(), a) != argv.end(); };
  if (argv.size() >= 2 && argv[1] == "status") {
    if (has("-jp")) return exited(2, "", local_data("zfs-fuse-status-j-rejected.stderr.txt"));
    if (has("-p")) return exited(2, "", local_data("zfs-fuse-status-p-rejected.stderr.txt"));
    return exited(0, local_data("zfs-fuse-status-two-pools-2000M.txt"));
  }
  if (argv.size() >= 2 && argv[1] == "list") {
    if (has("-Hp")) return exited(2, "", local_data("zfs-fuse-list-Hp-rejected.stderr.txt"));
    if (argv.back().find("fragmentation") != std::string::npos)
      return exited(2, "", local_data("zfs-fuse-list-H-fragmentation-rejected.stderr.txt"));
    return exited(0, local_data("zfs-fuse-list-H-o-two-pools-2000M.txt"));
  }
  return exited(1, "", "unexpected");
}

TEST(ZfsProbe, DetectsPlainTextOnZfsFuseAndCachesIt) {
  ScriptedRunner r;
  r.handler = zfs_fuse_like;
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe;
  EXPECT_EQ(probe.scope(), Scope::host);
  auto res = probe.run(Target::host(), ctx);
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(probe.detected_format(), StatusFormat::text);
  // status -jp, status -p, status, then list -Hp, list -H (all columns), list -H (legacy columns).
  ASSERT_EQ(r.argvs.size(), 6u);
  EXPECT_EQ(r.argvs[0][2], "-jp");
  EXPECT_EQ(r.argvs[1][2], "-p");
  EXPECT_EQ(r.argvs[2].size(), 2u);
  EXPECT_EQ(r.argvs[3][2], "-Hp");
  EXPECT_EQ(r.argvs[4][2], "-H");
  EXPECT_EQ(r.argvs[5].back(), "name,size,allocated,free,capacity,health");
  const auto& b = res.metrics;
  // Counters at 0 have no series by default (zfs.detail: compact): every one there is above 0.
  double max_ck = 0;
  int counters = 0;
  for (const auto& f : b.families())
    if (f.name == "fsaudit_zfs_vdev_errors")
      for (const auto& m : f.metric) {
        ++counters;
        EXPECT_GT(m.gauge.value, 0);
        for (const auto& l : m.label)
          if (l.name == "kind" && l.value == "checksum") max_ck = std::max(max_ck, m.gauge.value);
      }
  EXPECT_GE(counters, 1);
  EXPECT_EQ(max_ck, 3533);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_state", {{"pool", "fsauditcap2"}, {"state", "online"}}), 1);
  EXPECT_NEAR(b.value("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap"}}), 1.47 * 1024 * 1024 * 1024, 1);
  // The mirror survives one member failure; the single vdev none by design: no series for it
  // (stack::exports_redundancy).
  EXPECT_EQ(b.value("fsaudit_redundancy_margin", {{"target", "fsauditcap"}, {"fs", "zfs"}}), 1);
  EXPECT_EQ(b.value("fsaudit_redundancy_designed", {{"target", "fsauditcap"}, {"fs", "zfs"}}), 1);
  EXPECT_FALSE(b.has("fsaudit_redundancy_margin", {{"target", "fsauditcap2"}}));
  EXPECT_FALSE(b.has("fsaudit_redundancy_designed", {{"target", "fsauditcap2"}}));

  r.argvs.clear();
  res = probe.run(Target::host(), ctx);
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  ASSERT_EQ(r.argvs.size(), 1u);  // cached: plain status; the list's rows are kept (next test)
  EXPECT_EQ(r.argvs[0].size(), 2u);
  EXPECT_NEAR(res.metrics.value("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap"}}), 1.47 * 1024 * 1024 * 1024, 1);
}

// zpool status runs every time; zpool list at most every kPoolListMaxAge, except for a pool it has
// no row for yet, after a failed list, and never for a pool the status no longer shows.
TEST(ZfsProbe, PoolListRowsKeptTwoMinutesStatusEveryRun) {
  FakeClock clock;
  HostPaths host;
  ToolPaths tools;
  std::stop_source stop;
  bool third_pool = false, list_fails = false;
  std::string list_out = local_data("zfs-fuse-list-H-o-two-pools-2000M.txt");
  ScriptedRunner r;
  r.handler = [&](const std::vector<std::string>& argv) {
    auto out = zfs_fuse_like(argv);
    if (argv.size() == 2 && argv[1] == "status" && third_pool) {
      // The second pool again under a new name: a pool imported since the last list.
      auto second = out.out.find("  pool: fsauditcap2");
      std::string copy = out.out.substr(second);
      copy.replace(copy.find("fsauditcap2"), 11, "fsauditcap3");
      out.out += "\n" + copy;
    }
    if (argv.size() > 2 && argv[1] == "list" && out.exit_code == 0) {
      if (list_fails) return exited(1, "", "cannot open pool\n");
      out.out = list_out;
    }
    return out;
  };
  ZfsProbe probe;
  auto run = [&] {
    ProbeContext ctx{host, r, clock, tools, std::filesystem::temp_directory_path(), stop.get_token(), clock.now() + 5s};
    r.argvs.clear();
    return probe.run(Target::host(), ctx);
  };
  auto lists = [&] {
    int n = 0;
    for (const auto& a : r.argvs) n += a.size() > 1 && a[1] == "list";
    return n;
  };
  const std::string rows2 = "fsauditcap\t1.95G\t1.50G\t460M\t76%\tONLINE\nfsauditcap2\t1.95G\t100M\t1.85G\t5%\tONLINE\n";
  ASSERT_EQ(run().outcome, Outcome::ok);
  EXPECT_EQ(lists(), 3);  // the format detection: -Hp, -H all columns, -H legacy columns
  list_out = rows2;
  for (int i = 1; i <= 3; ++i) {
    clock.advance(30s);
    auto res = run();
    ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
    EXPECT_EQ(lists(), 0) << "run " << i;
    EXPECT_NEAR(res.metrics.value("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap"}}), 1.47 * 1024 * 1024 * 1024, 1);
  }
  clock.advance(30s);  // 120 s after the last list
  auto res = run();
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(lists(), 1);
  EXPECT_NEAR(res.metrics.value("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap"}}), 1.5 * 1024 * 1024 * 1024, 1);

  // A pool the kept rows do not have: zpool list runs at once, and its missing row is a failure.
  clock.advance(30s);
  third_pool = true;
  res = run();
  EXPECT_EQ(lists(), 1);
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("no row for pool 'fsauditcap3'"), std::string::npos) << res.reason;
  list_out = rows2 + "fsauditcap3\t1.95G\t1G\t950M\t51%\tONLINE\n";
  clock.advance(30s);
  res = run();
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(lists(), 1) << "the failed list was not kept";
  EXPECT_DOUBLE_EQ(res.metrics.value("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap3"}}), 1024.0 * 1024 * 1024);

  // The pool is exported: its kept row is not published.
  clock.advance(30s);
  third_pool = false;
  res = run();
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(lists(), 0);
  EXPECT_FALSE(res.metrics.has("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap3"}}));
  EXPECT_TRUE(res.metrics.has("fsaudit_zfs_pool_allocated_bytes", {{"pool", "fsauditcap2"}}));

  // A failed list is tried again on the next run, not in two minutes.
  clock.advance(120s);
  list_fails = true;
  res = run();
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_EQ(lists(), 1);
  list_fails = false;
  clock.advance(30s);
  res = run();
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(lists(), 1);
}

TEST(ZfsProbe, PrefersJsonWhenAccepted) {
  ScriptedRunner r;
  r.handler = [](const std::vector<std::string>& argv) {
    if (argv[1] == "status") {
      std::string j = testing::fixture("written/zfs/zpool-status-jp-openzfs-2.4-mirror-raidz-special-log-cache-spare.json");
      return exited(0, j);
    }
    return exited(0, "labpool\t872415232\t372736\t872042496\t0\t0\t1.00\tONLINE\n");
  };
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(probe.detected_format(), StatusFormat::json);
  ASSERT_EQ(r.argvs.size(), 2u);
  EXPECT_EQ(r.argvs[1][2], "-Hp");
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_pool_size_bytes", {{"pool", "labpool"}}), 872415232);
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_vdev_state", {{"vdev", "/tmp/zlab/d8.img"}, {"state", "avail"}}), 1);
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_probe_info", {{"format", "json"}}), 1);
}

// Each complete status is posted for the scrub probe, with when its zpool began; one cut short is not.
TEST(ZfsProbe, PostsACompleteStatusToTheShareAndNotOneCutShort) {
  auto share = std::make_shared<StatusShare>();
  ScriptedRunner r;
  r.handler = zfs_fuse_like;
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe(share);
  const auto before = c.clock.now();
  ASSERT_EQ(probe.run(Target::host(), ctx).outcome, Outcome::ok);
  auto got = share->recent(c.clock.now(), 40s, "zpool");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->pools.size(), 2u);
  EXPECT_EQ(got->pools[0].name, "fsauditcap");
  EXPECT_FALSE(share->recent(c.clock.now(), 40s, "/opt/other/zpool")) << "another zpool's status";
  EXPECT_FALSE(share->recent(before + 41s, 40s, "zpool")) << "older than the age asked for";
  share->note_action(c.clock.now());
  EXPECT_FALSE(share->recent(c.clock.now(), 40s, "zpool")) << "begun before an action on a pool";

  // A status cut inside its first pool's config tree fails the run and is not posted.
  auto fresh = std::make_shared<StatusShare>();
  ScriptedRunner cut;
  cut.handler = [](const std::vector<std::string>& argv) {
    auto out = zfs_fuse_like(argv);
    if (argv.size() == 2 && argv[1] == "status") {
      auto root = out.out.find('\n', out.out.find("NAME"));  // the header, then the pool's own row
      out.out = out.out.substr(0, out.out.find('\n', root + 1) + 1);
    }
    return out;
  };
  auto cut_ctx = c.make(cut);
  ZfsProbe cut_probe(fresh);
  EXPECT_EQ(cut_probe.run(Target::host(), cut_ctx).outcome, Outcome::failed);
  EXPECT_FALSE(fresh->recent(c.clock.now(), 40s, "zpool"));
}

TEST(ZfsProbe, MissingToolIsNotApplicable) {
  ProcessRunner r;
  Ctx c;
  c.tools["zpool"] = "/nonexistent/fsaudit-test/zpool";
  auto ctx = c.make(r);
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::not_applicable);
  EXPECT_NE(res.reason.find("zpool"), std::string::npos) << res.reason;
}

TEST(ZfsProbe, NoPoolsIsNotApplicable) {
  ScriptedRunner r;
  r.handler = [](const std::vector<std::string>& argv) {
    if (argv.size() > 2) return exited(2, "", "invalid option 'j'\n");
    return exited(0, "no pools available\n");
  };
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::not_applicable);
  EXPECT_EQ(res.reason, "no ZFS pools imported");
}

TEST(ZfsProbe, ZfsFuseNotRunningIsNotApplicable) {
  ScriptedRunner r;
  r.handler = [](const std::vector<std::string>&) { return exited(1, "", local_data("zfs-fuse-not-running.stderr.txt")); };
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::not_applicable);
  EXPECT_NE(res.reason.find("connect: Connection refused"), std::string::npos) << res.reason;
}

TEST(ZfsProbe, FailingZpoolReportsItsMessage) {
  ScriptedRunner r;
  r.handler = [](const std::vector<std::string>&) {
    return exited(1, "", "Permission denied the ZFS utilities must be run as root.\n");
  };
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("zpool status: exit 1: Permission denied"), std::string::npos) << res.reason;
  EXPECT_EQ(probe.detected_format(), StatusFormat::unknown);  // nothing cached from a failure
}

TEST(ZfsProbe, ListFailureKeepsStatusMetricsButFails) {
  ScriptedRunner r;
  r.handler = [](const std::vector<std::string>& argv) {
    if (argv[1] == "status") return zfs_fuse_like(argv);
    return exited(1, "", "list broke\n");
  };
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("zpool list: exit 1: list broke"), std::string::npos) << res.reason;
  EXPECT_TRUE(res.metrics.has("fsaudit_zfs_pool_state", {{"pool", "fsauditcap"}}));
}

TEST(ZfsProbe, StopRequestedBeforeRun) {
  ScriptedRunner r;
  r.handler = zfs_fuse_like;
  Ctx c;
  auto ctx = c.make(r);
  c.stop.request_stop();
  ZfsProbe probe;
  auto res = probe.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_TRUE(r.argvs.empty());
}

// A fake zpool that never answers: the probe times out within its budget, with the runner's reason.
TEST(ZfsProbe, HungZpoolTimesOutWithClearReason) {
  testing::TempDir dir("fsaudit-zfs-hang");
  auto fake = dir / "zpool";
  testing::write_text(fake, "#!/bin/sh\nexec sleep 1000\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ProcessRunner r;
  Ctx c;
  c.tools["zpool"] = fake.string();
  auto ctx = c.make(r, 1500ms);
  ZfsProbe probe;
  auto t0 = std::chrono::steady_clock::now();
  auto res = probe.run(Target::host(), ctx);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("timed out"), std::string::npos) << res.reason;
  EXPECT_NE(res.reason.find("zpool status"), std::string::npos) << res.reason;
  EXPECT_LT(took, 5s);
}

// A fake zfs-fuse-like zpool script through the real runner: detection sees "invalid option".
TEST(ZfsProbe, FakeScriptThroughProcessRunner) {
  testing::TempDir dir("fsaudit-zfs-fake");
  auto status = dir / "status.txt";
  auto list = dir / "list.txt";
  testing::write_text(status, local_data("zfs-fuse-status-after-corruption-scrub-cksum-96M.txt"));
  testing::write_text(list, local_data("zfs-fuse-list-H-o-with-data-96M.txt"));
  auto fake = dir / "zpool";
  testing::write_text(fake,
                      "#!/bin/sh\n"
                      "for a in \"$@\"; do case \"$a\" in -jp|-p|-Hp) echo \"invalid option '${a#-}'\" >&2; exit 2;;\n"
                      "  *fragmentation*) echo \"bad property list: invalid property 'fragmentation'\" >&2; exit 2;; esac; done\n"
                      "case \"$1\" in status) cat '" + status.string() + "';; list) cat '" + list.string() + "';; esac\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ProcessRunner r;
  Ctx c;
  c.tools["zpool"] = fake.string();
  auto ctx = c.make(r);
  ZfsProbe probe(nullptr, /*full_detail=*/true);  // zpool list's CAP too
  auto res = probe.run(Target::host(), ctx);
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(probe.detected_format(), StatusFormat::text);
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_pool_capacity_ratio", {{"pool", "fsauditcap"}}), 0.44);
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_pool_state", {{"pool", "fsauditcap"}, {"state", "online"}}), 1);
}

}  // namespace
}  // namespace fsaudit::zfs
