// zpool output that is empty, cut short, oversized, junk or holds names with blanks: a failure with a
// reason (never "no pools", never a partial success), and the right names and counts when it is
// complete. Scripted runner for the run logic; the real ProcessRunner for the oversized output.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <random>

#include "daemon/core/clock.hpp"
#include "daemon/metrics/label_value.hpp"
#include "daemon/metrics/store.hpp"
#include "probes/zfs/probe.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::zfs {
namespace {

using namespace std::chrono_literals;

struct ScriptedRunner : CommandRunner {
  std::function<CommandResult(const std::vector<std::string>&)> answer;
  CommandResult run(const CommandSpec& spec, std::stop_token) override { return answer(spec.argv); }
};

CommandResult exited(int code, std::string out, std::string err = "") {
  return testing::FakeRunner::exited(code, std::move(out), std::move(err));
}

struct Ctx {
  HostPaths host;
  SystemClock clock;
  ToolPaths tools;
  std::stop_source stop;
  ProbeContext make(CommandRunner& r, std::chrono::milliseconds budget = 10s) {
    return ProbeContext{host, r, clock, tools, std::filesystem::temp_directory_path(), stop.get_token(),
                        clock.now() + budget};
  }
};

// zpool status (text, as OpenZFS pads it) of a pool and a file vdev whose names hold blanks.
const std::string kSpacedStatus =
    "  pool: my pool\n"
    " state: ONLINE\n"
    "status: One or more devices has experienced an unrecoverable error.\n"
    "  scan: scrub repaired 0B in 00:00:01 with 0 errors on Sun Nov 29 23:55:21 2026\n"
    "config:\n"
    "\n"
    "\tNAME                                STATE     READ WRITE CKSUM\n"
    "\tmy pool                             ONLINE       0     0     0\n"
    "\t  mirror-0                          ONLINE       0     0     0\n"
    "\t    /srv/zfs images/disk 1.img      ONLINE       0     0     6\n"
    "\t    /srv/zfs images/disk 2.img      ONLINE       0     0     0\n"
    "\n"
    "errors: No known data errors\n";
const std::string kSpacedList = "my pool\t100663296\t1000\t99000000\t1\t3\t1.00\tONLINE\n";

// A text-only zpool (rejects -j and -p) that prints `status` for status and `list` for list.
std::function<CommandResult(const std::vector<std::string>&)> text_zpool(CommandResult status,
                                                                         std::string list = kSpacedList) {
  return [status, list](const std::vector<std::string>& argv) {
    if (argv[1] == "status") {
      if (argv.size() > 2) return exited(2, "", "invalid option 'j'\nusage:\n");
      return status;
    }
    if (argv[1] == "list") return exited(0, list);
    return exited(1, "", "unexpected");
  };
}

// "" when `promtool check metrics` accepts the batch's exposition, else its complaint.
std::string promtool_check(const metrics::Batch& b) {
  testing::TempDir dir;
  testing::write_text(dir / "scrape.txt", metrics::serialize(b));
  auto r = testing::run({"sh", "-c", "promtool check metrics < '" + (dir / "scrape.txt").string() + "'"});
  return r.exit_code == 0 ? "" : "promtool exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
}

ProbeResult run_with(std::function<CommandResult(const std::vector<std::string>&)> f) {
  ScriptedRunner r;
  r.answer = std::move(f);
  Ctx c;
  auto ctx = c.make(r);
  ZfsProbe p;
  return p.run(Target::host(), ctx);
}

TEST(ZfsBadOutput, EmptyOutputWithExitZeroIsAFailureNotNoPools) {
  auto res = run_with(text_zpool(exited(0, "")));
  EXPECT_EQ(res.outcome, Outcome::failed) << res.reason;
  EXPECT_NE(res.reason.find("no pool"), std::string::npos) << res.reason;
}

TEST(ZfsBadOutput, NoPoolsAvailableIsNotApplicable) {
  // Old zpools print it on stdout, newer ones on stderr with exit 0.
  EXPECT_EQ(run_with(text_zpool(exited(0, "no pools available\n"))).outcome, Outcome::not_applicable);
  EXPECT_EQ(run_with(text_zpool(exited(0, "", "no pools available\n"))).outcome, Outcome::not_applicable);
}

TEST(ZfsBadOutput, OutputCutMidTableIsAFailure) {
  auto cut = kSpacedStatus.substr(0, kSpacedStatus.find("/srv/zfs images/disk 2.img") + 10);
  auto res = run_with(text_zpool(exited(0, cut)));
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("cut short"), std::string::npos) << res.reason;
  // Cut at every line boundary up to the last tree row: never a success. (A cut exactly after the
  // tree's closing blank line reads as a pool whose error count zpool did not print.)
  auto lines_end = kSpacedStatus.find("disk 2.img");
  for (std::size_t i = 0; i < lines_end; ++i) {
    if (kSpacedStatus[i] != '\n') continue;
    auto r = run_with(text_zpool(exited(0, kSpacedStatus.substr(0, i + 1))));
    EXPECT_EQ(r.outcome, Outcome::failed) << "cut after byte " << i;
  }
}

TEST(ZfsBadOutput, ParserMarksPoolsWithoutTheirErrorsLine) {
  auto whole = parse_zpool_status(kSpacedStatus);
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_TRUE(whole->pools[0].complete);
  auto cut = parse_zpool_status(kSpacedStatus.substr(0, kSpacedStatus.find("\t    /srv/zfs images/disk 2.img")));
  ASSERT_TRUE(cut.ok()) << cut.error();
  EXPECT_FALSE(cut->pools[0].complete);
}

// Seen on zfs-fuse: a pool whose vdev files are gone prints its tree but no "errors:" line (its
// error count is unknown). That is complete; the same cut inside the tree is not.
TEST(ZfsBadOutput, UnavailPoolEndsWithItsTree) {
  const std::string unavail =
      "  pool: gone\n"
      " state: UNAVAIL\n"
      "status: One or more devices could not be opened.  There are insufficient\n"
      "\treplicas for the pool to continue functioning.\n"
      "action: Attach the missing device and online it using 'zpool online'.\n"
      "   see: http://www.sun.com/msg/ZFS-8000-3C\n"
      " scrub: none requested\n"
      "config:\n"
      "\n"
      "\tNAME                    STATE     READ WRITE CKSUM\n"
      "\tgone                    UNAVAIL      0     0     0  insufficient replicas\n"
      "\t  mirror-0              UNAVAIL      0     0     0  insufficient replicas\n"
      "\t    /tmp/x/vdev-a.img   UNAVAIL      0     0     0  cannot open\n"
      "\t    /tmp/x/vdev-b.img   UNAVAIL      0     0     0  cannot open\n"
      "\n";
  auto whole = parse_zpool_status(unavail + kSpacedStatus);
  ASSERT_TRUE(whole.ok()) << whole.error();
  ASSERT_EQ(whole->pools.size(), 2u);
  EXPECT_TRUE(whole->pools[0].complete);
  EXPECT_TRUE(whole->pools[1].complete);
  EXPECT_EQ(whole->pools[0].vdevs.size(), 3u);
  // Cut after its mirror-0 row: a group without its children is a cut, wherever the output ends.
  auto cut = parse_zpool_status(unavail.substr(0, unavail.find("\t    /tmp/x/vdev-a.img")));
  ASSERT_TRUE(cut.ok()) << cut.error();
  EXPECT_FALSE(cut->pools[0].complete);
  // Last in the output, its tree ends with the output (no blank line after it): whole.
  auto last = parse_zpool_status(kSpacedStatus + "\n" + unavail.substr(0, unavail.size() - 1));
  ASSERT_TRUE(last.ok()) << last.error();
  ASSERT_EQ(last->pools.size(), 2u);
  EXPECT_TRUE(last->pools[1].complete);
  EXPECT_EQ(last->pools[1].vdevs.size(), 3u);
}

// Captured here: a healthy pool, then one zfs-fuse could not open at its start (its vdev file gone).
// zpool printed the UNAVAIL pool's tree last, with no "errors:" line and nothing after it. The probe
// reports both pools; it used to fail as "cut short", blind to every pool of the host exactly when
// one had lost its devices.
TEST(ZfsBadOutput, LastPoolUnavailWithoutErrorsLineIsReported) {
  auto captured = testing::fixture("zfs/zfs-fuse-status-last-pool-unavail-no-errors-line.txt");
  while (captured.ends_with("\n\n")) captured.pop_back();  // exactly as zpool printed it
  auto parsed = parse_zpool_status(captured);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_EQ(parsed->pools.size(), 2u);
  const auto& gone = parsed->pools[1];
  EXPECT_EQ(gone.state, "UNAVAIL");
  EXPECT_TRUE(parsed->pools[0].complete);
  EXPECT_TRUE(gone.complete);
  ASSERT_EQ(gone.vdevs.size(), 1u);
  EXPECT_EQ(gone.vdevs[0].note, "cannot open");
  EXPECT_FALSE(gone.data_errors.has_value()) << "zpool did not say: unknown, not 0";

  const std::string list = "fsauditlab4010\t128974848\t606208\t128368640\t0\t0\t1.00\tONLINE\n"
                           "fsauditscale9085\t-\t-\t-\t-\t-\t-\tFAULTED\n";
  auto res = run_with(text_zpool(exited(0, captured), list));
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_pool_state", {{"pool", "fsauditscale9085"}, {"state", "unavail"}}), 1);
  EXPECT_EQ(res.metrics.value("fsaudit_zfs_pool_state", {{"pool", "fsauditlab4010"}, {"state", "online"}}), 1);
  EXPECT_EQ(promtool_check(res.metrics), "");

  // Cut anywhere before the end, at a line boundary or inside the last line: a failure, never a report.
  for (std::size_t i = captured.find("  pool: fsauditscale9085"); i + 1 < captured.size(); ++i) {
    auto r = run_with(text_zpool(exited(0, captured.substr(0, i + 1)), list));
    EXPECT_EQ(r.outcome, Outcome::failed) << "cut after byte " << i << ": ..."
                                          << captured.substr(i > 40 ? i - 40 : 0, 41);
  }
  // Text copied with its final newline lost: a whole "errors:" line still closes its pool; the same
  // line cut inside its words does not.
  auto healthy = captured.substr(0, captured.find("\n\n  pool: fsauditscale9085"));
  ASSERT_TRUE(healthy.ends_with("errors: No known data errors"));
  EXPECT_EQ(run_with(text_zpool(exited(0, healthy), list.substr(0, list.find('\n') + 1))).outcome, Outcome::ok);
  auto parsed_cut = parse_zpool_status(healthy.substr(0, healthy.size() - 3));
  ASSERT_TRUE(parsed_cut.ok());
  EXPECT_FALSE(parsed_cut->pools[0].complete);
  // The same pool ONLINE (zpool could open it) without "errors:" is cut short.
  auto online = captured;
  online.replace(online.find(" state: UNAVAIL"), 15, " state: ONLINE");
  EXPECT_EQ(run_with(text_zpool(exited(0, online), list)).outcome, Outcome::failed);
}

TEST(ZfsBadOutput, TruncatedFlagIsAFailure) {
  auto st = exited(0, kSpacedStatus);
  st.truncated = true;
  auto res = run_with(text_zpool(st));
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("cut short"), std::string::npos) << res.reason;
}

TEST(ZfsBadOutput, ListMissingAPoolIsAFailure) {
  auto res = run_with(text_zpool(exited(0, kSpacedStatus), ""));
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("no row for pool 'my pool'"), std::string::npos) << res.reason;
}

TEST(ZfsBadOutput, BinaryJunkIsAFailureWithABoundedReason) {
  std::mt19937 rng(3);
  std::string junk(64 << 10, '\0');
  for (auto& ch : junk) ch = static_cast<char>(rng());
  auto res = run_with(text_zpool(exited(0, junk)));
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_LT(res.reason.size(), 300u);
  // What the daemon exports as the reason label is valid UTF-8, and the scrape passes promtool.
  metrics::Batch b;
  b.info("fsaudit_probe_failure_info", "Why the probe's last run failed.",
         {{"probe", "zfs"}, {"target", "host"}, {"reason", res.reason}});
  EXPECT_TRUE(metrics::is_clean_label_value(b.families()[0].metric[0].label[1].value));
  EXPECT_EQ(promtool_check(b), "");
}

// Names with blanks and quotes in a complete output: every series passes promtool.
TEST(ZfsBadOutput, ScrapeWithSpacedNamesPassesPromtool) {
  auto res = run_with(text_zpool(exited(0, kSpacedStatus)));
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  EXPECT_EQ(promtool_check(res.metrics), "");
}

TEST(ZfsBadOutput, NamesWithBlanksAreReadByColumn) {
  auto res = run_with(text_zpool(exited(0, kSpacedStatus)));
  ASSERT_EQ(res.outcome, Outcome::ok) << res.reason;
  const auto& b = res.metrics;
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_errors",
                    {{"pool", "my pool"}, {"vdev", "/srv/zfs images/disk 1.img"}, {"kind", "checksum"}}),
            6);
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_state",
                    {{"pool", "my pool"}, {"vdev", "/srv/zfs images/disk 2.img"}, {"state", "online"}}),
            1);
  EXPECT_EQ(b.value("fsaudit_zfs_pool_size_bytes", {{"pool", "my pool"}}), 100663296);
  EXPECT_FALSE(b.has("fsaudit_zfs_pool_redundant"));  // the stack model says it:
  EXPECT_GE(b.value("fsaudit_redundancy_designed", {{"target", "my pool"}, {"fs", "zfs"}}), 1);
}

TEST(ZfsBadOutput, MisalignedRowWithBlanksIsAmbiguousAndSaysSo) {
  std::string s = kSpacedStatus;
  // Shift one row left so it no longer lines up with STATE: its name cannot be told from its state.
  auto p = s.find("\t    /srv/zfs images/disk 1.img      ONLINE");
  s.replace(p, std::string("\t    /srv/zfs images/disk 1.img      ONLINE").size(), "\t    /srv/zfs images/disk 1.img ONLINE");
  auto parsed = parse_zpool_status(s);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("ambiguous"), std::string::npos) << parsed.error();
}

// scrub_spent_paused (seconds) is not subtracted: the duration is zpool status's end - start (issue 32).
TEST(ZfsBadOutput, JsonScrubDurationIncludesTimeSpentPaused) {
  auto r = parse_zpool_status_json(R"({"output_version":{"command":"zpool status","vers_major":0,"vers_minor":1},
    "pools":{"tank":{"name":"tank","state":"ONLINE","error_count":"0",
      "scan_stats":{"function":"SCRUB","state":"FINISHED","start_time":"1000000","end_time":"1014400",
        "to_examine":"1000","examined":"1000","issued":"1000","processed":"0","errors":"0",
        "scrub_pause":"-","scrub_spent_paused":"3600"},
      "vdevs":{"tank":{"name":"tank","vdev_type":"root","state":"ONLINE",
        "vdevs":{"sda":{"name":"sda","vdev_type":"disk","state":"ONLINE","read_errors":"0","write_errors":"0","checksum_errors":"0"}}}}}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(r->pools[0].scan.duration_seconds);
  EXPECT_DOUBLE_EQ(*r->pools[0].scan.duration_seconds, 14400.0);
}

TEST(ZfsBadOutput, JsonWithoutZpoolMarkersOrVdevsIsAFailure) {
  EXPECT_FALSE(parse_zpool_status_json("{}").ok());
  auto no_tree = parse_zpool_status_json(R"({"output_version":{},"pools":{"tank":{"name":"tank","state":"ONLINE"}}})");
  ASSERT_TRUE(no_tree.ok());
  EXPECT_FALSE(no_tree->pools[0].complete);
  auto res = run_with([&](const std::vector<std::string>& argv) {
    if (argv[1] == "status")
      return exited(0, R"({"output_version":{"command":"zpool status"},"pools":{"tank":{"name":"tank","state":"ONLINE"}}})");
    return exited(0, "tank\t1\t1\t1\t1\t1\t1.00\tONLINE\n");
  });
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("is complete"), std::string::npos) << res.reason;
  auto none = parse_zpool_status_json(R"({"output_version":{"command":"zpool status"},"pools":{}})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->no_pools);
}

// Through the real runner: a fake zpool prints a valid status and then 50 MiB of junk. The runner
// keeps 8 MiB and flags the output truncated; the probe must fail, not parse the kept part.
TEST(ZfsBadOutput, OversizedOutputThroughTheRealRunnerFails) {
  testing::TempDir dir;
  testing::write_text(dir / "status.txt", kSpacedStatus);
  testing::write_text(dir / "zpool",
                      "#!/bin/sh\n"
                      "case \"$*\" in\n"
                      "  *-j*|*-p*) echo \"invalid option\" >&2; exit 2;;\n"
                      "  status*) cat '" + (dir / "status.txt").string() + "'; head -c 52428800 /dev/zero | tr '\\0' 'x';;\n"
                      "  list*) printf 'my pool\\t1\\t1\\t1\\t1\\t1\\t1.00\\tONLINE\\n';;\n"
                      "esac\n");
  std::filesystem::permissions(dir / "zpool", std::filesystem::perms::owner_all);
  ProcessRunner runner;
  Ctx c;
  c.tools["zpool"] = (dir / "zpool").string();
  auto ctx = c.make(runner, 30s);
  ZfsProbe p;
  auto res = p.run(Target::host(), ctx);
  EXPECT_EQ(res.outcome, Outcome::failed);
  EXPECT_NE(res.reason.find("cut short"), std::string::npos) << res.reason;
}

}  // namespace
}  // namespace fsaudit::zfs
