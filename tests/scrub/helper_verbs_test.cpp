// The privileged helper's scrub verbs through the helper's one dispatch (handle_helper_request):
// a target that the helper's own config does not scrub, or any extra key, is refused before a
// scrub command runs; a target it scrubs is carried out by the filesystem's driver.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/config/config.hpp"
#include "probes/canary/helper_protocol.hpp"
#include "probes/scrub/helper_route.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/support.hpp"
#include "daemon/core/files.hpp"
#include "probes/scrub_driver/model.hpp"

namespace fsaudit::scrub {
namespace {

using testing::FakeRunner;
using testing::write_text;

struct HelperHost {
  testing::TempDir dir{"scrub-helper"};
  FakeRunner runner;
  config::Config own;
  explicit HelperHost(const std::string& scrub_yaml) {
    std::filesystem::create_directories(dir / "proc/self");
    std::filesystem::create_directories(dir / "sys/block");
    write_text(dir / "proc/self/mountinfo",
               "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
               "40 22 0:45 / /mnt/r1 rw,relatime shared:20 - btrfs /dev/loop7 rw\n");
    own = config::parse_config("state_dir: " + (dir / "state").string() + "\n" + scrub_yaml, "helper.yaml");
    own.host = HostPaths::under(dir.path());
    std::filesystem::create_directories(own.state_dir);
    runner.missing("zpool list -H -o name");
  }
  nlohmann::json ask(const std::string& line) {
    return nlohmann::json::parse(canary::handle_helper_request(line, own, runner));
  }
  // The helper's own state: a scrub of /mnt/r1 it started, detached job 4242.
  void record_job_4242() {
    std::filesystem::create_directories(own.state_dir / "scrub");
    TargetState st;
    st.running = st.by_us = true;
    st.job_pid = 4242;
    st.job_dir = (own.state_dir / "scrub/jobs/btrfs__mnt_r1").string();
    write_text(own.state_dir / "scrub/btrfs__mnt_r1.state", st.serialize());
  }
  int scrub_commands() const {
    int n = 0;
    for (const auto& c : runner.calls) n += c.find(" scrub ") != std::string::npos && c.find(" status ") == std::string::npos;
    return n;
  }
};

TEST(ScrubHelperVerbs, RefusesTargetsNotInItsOwnConfigAndExtraKeys) {
  HelperHost h("scrub:\n  filesystems: [btrfs]\n");
  h.runner.answer("btrfs scrub status -d -R /mnt/r1", "UUID: 1\nStatus: running\n");
  for (const std::string req : {
           R"({"verb": "scrub-start", "target": "/"})",           // ext4: no scrub
           R"({"verb": "scrub-start", "target": "/mnt/other"})",  // not mounted
           R"({"verb": "scrub-cancel", "target": "tank"})",       // no pool in the helper's view
           R"({"verb": "scrub-pause", "target": "../mnt/r1"})",
           R"({"verb": "scrub-start", "target": "/mnt/r1", "tool": "/bin/sh"})",
           R"({"verb": "scrub-start", "target": "/mnt/r1", "mountpoint": "/"})",
           R"({"verb": "scrub-start", "canary": "/mnt/r1"})",
           R"({"verb": "scrub-start", "target": 7})",
           R"({"verb": "scrub-start"})",
       }) {
    auto j = h.ask(req);
    EXPECT_FALSE(j.value("ok", true)) << req << " -> " << j.dump();
    EXPECT_FALSE(j.value("refused", "").empty()) << req;
  }
  EXPECT_EQ(h.scrub_commands(), 0) << "a refused request ran a scrub command";
  auto j = h.ask(R"({"verb": "scrub-start", "target": "/mnt/other"})");
  EXPECT_NE(j.value("refused", "").find("no scrub target named '/mnt/other'; scrub targets: /mnt/r1"), std::string::npos) << j.dump();
  EXPECT_NE(j.value("refused", "").find("helper.yaml"), std::string::npos) << j.dump();

  // The same mount left out of the helper's own scrub config is refused too.
  HelperHost zfs_only("scrub:\n  filesystems: [zfs]\n");
  j = zfs_only.ask(R"({"verb": "scrub-cancel", "target": "/mnt/r1"})");
  EXPECT_FALSE(j.value("ok", true)) << j.dump();
  EXPECT_EQ(zfs_only.scrub_commands(), 0);
  // Other verbs are the rest of the helper's: still refused by its own rules.
  EXPECT_FALSE(h.ask(R"({"verb": "scrub-now", "target": "/mnt/r1"})").value("ok", true));
}

// An operator (a root client) may cancel a scrub of a target the config has, whoever started it.
TEST(ScrubHelperVerbs, CancelsAScrubOfATargetItsConfigHasForAnOperator) {
  HelperHost h("scrub:\n  filesystems: [btrfs]\n");
  h.runner.answer("btrfs scrub status -d -R /mnt/r1",
                  testing::fixture("written/btrfs/scrub-status-running-large-fs-progs-6.17.txt"));
  h.runner.answer("btrfs scrub cancel /mnt/r1", "");
  const std::string req = R"({"verb": "scrub-cancel", "target": "/mnt/r1"})";
  EXPECT_FALSE(h.ask(req).value("ok", true)) << "not started by fsaudit, and the daemon asks";
  EXPECT_EQ(h.runner.count("btrfs scrub cancel /mnt/r1"), 0);
  auto j = nlohmann::json::parse(canary::handle_helper_request(req, h.own, h.runner, 0, 0));
  EXPECT_TRUE(j.value("ok", false)) << j.dump();
  EXPECT_EQ(j.value("result", ""), "canceled the scrub of /mnt/r1");
  EXPECT_EQ(h.runner.count("btrfs scrub cancel /mnt/r1"), 1);
}

// A job named with pause/cancel must be the one the helper itself started for that target: any other
// pid (a stale one, another process's) is refused and nothing is signalled or canceled.
TEST(ScrubHelperVerbs, RefusesAJobItDidNotStart) {
  HelperHost h("scrub:\n  filesystems: [btrfs]\n");
  h.runner.answer("btrfs scrub status -d -R /mnt/r1",
                  testing::fixture("written/btrfs/scrub-status-running-large-fs-progs-6.17.txt"));
  h.runner.answer("btrfs scrub cancel /mnt/r1", "");
  // Nothing recorded yet: no job of the caller's is the helper's.
  for (const std::string req : {R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": "4242"})",
                                R"({"verb": "scrub-pause", "target": "/mnt/r1", "job": "1"})"}) {
    auto j = h.ask(req);
    EXPECT_FALSE(j.value("ok", true)) << req << " -> " << j.dump();
    EXPECT_NE(j.value("refused", "").find("is not a scrub job started here for /mnt/r1 (recorded: none)"), std::string::npos)
        << j.dump();
  }
  // Mistyped job ids, and a job on start (the helper starts its own), are refused before anything runs.
  for (const std::string req : {R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": 4242})",
                                R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": "-1"})",
                                R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": "12x"})",
                                R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": "99999999999"})",
                                R"({"verb": "scrub-start", "target": "/mnt/r1", "job": "4242"})"}) {
    auto j = h.ask(req);
    EXPECT_FALSE(j.value("ok", true)) << req << " -> " << j.dump();
  }
  EXPECT_EQ(h.scrub_commands(), 0) << "a refused request ran a scrub command";
  // The helper's own record names job 4242: that one, and only that one, is canceled.
  h.record_job_4242();
  auto j = h.ask(R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": "4243"})");
  EXPECT_NE(j.value("refused", "").find("job 4243 is not a scrub job started here for /mnt/r1 (recorded: 4242)"),
            std::string::npos)
      << j.dump();
  EXPECT_EQ(h.scrub_commands(), 0);
  j = h.ask(R"({"verb": "scrub-cancel", "target": "/mnt/r1", "job": "4242"})");
  EXPECT_TRUE(j.value("ok", false)) << j.dump();
  EXPECT_EQ(h.runner.count("btrfs scrub cancel /mnt/r1"), 1);
  // The answer reads back through the daemon's strict parser.
  auto a = parse_scrub_helper_answer(j.dump());
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->text, "canceled the scrub of /mnt/r1");
}

// An md array in the fixture's sysfs (no md driver on the test machines).
void md_array(const std::filesystem::path& root, const std::string& dev, const std::string& action,
              const std::string& degraded = "0") {
  auto md = root / "sys/block" / dev / "md";
  std::filesystem::create_directories(md);
  write_text(md / "level", "raid1\n");
  write_text(md / "sync_action", action + "\n");
  write_text(md / "degraded", degraded + "\n");
  write_text(md / "mismatch_cnt", "0\n");
}
std::string sync_action(const std::filesystem::path& root, const std::string& dev) {
  return read_file(root / "sys/block" / dev / "md/sync_action").value_or("?");
}

// The helper applies the scrub policy of its own config to the daemon's requests: what the daemon
// may not do itself (observe_only, a degraded array, an excluded target, a check somebody else
// started) it cannot have the helper do either. Nothing is written for a refused request.
TEST(ScrubHelperVerbs, AppliesTheScrubPolicyOfItsOwnConfig) {
  HelperHost h(
      "targets: {exclude: [md2, /mnt/r1]}\n"
      "scrub:\n  filesystems: [md]\n  targets:\n    - match: md5\n      observe_only: true\n");
  md_array(h.dir.path(), "md1", "check");  // somebody else's check
  md_array(h.dir.path(), "md2", "idle");   // excluded by name
  md_array(h.dir.path(), "md3", "idle", "1");
  md_array(h.dir.path(), "md5", "idle");
  md_array(h.dir.path(), "md7", "idle");  // mounted at an excluded mount point
  write_text(h.dir / "proc/self/mountinfo",
             "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "40 22 9:7 / /mnt/r1 rw,relatime shared:20 - ext4 /dev/md7 rw\n");
  struct Case {
    std::string req, why;
  };
  for (const auto& c : std::vector<Case>{
           {R"({"verb": "scrub-start", "target": "md5"})", "md5: observe_only is set: fsaudit never starts scrubs here"},
           {R"({"verb": "scrub-start", "target": "md3"})", "md3: target is degraded (allow_degraded: false)"},
           {R"({"verb": "scrub-start", "target": "md2"})", "no scrub target named 'md2'"},
           {R"({"verb": "scrub-start", "target": "md7"})", "no scrub target named 'md7'"},
           {R"({"verb": "scrub-cancel", "target": "md1"})", "the scrub of md1 was not started by fsaudit"},
           {R"({"verb": "scrub-pause", "target": "md1"})", "the scrub of md1 was not started by fsaudit"},
           {R"({"verb": "md-sync-action", "device": "md1", "action": "idle"})", "the scrub of md1 was not started by fsaudit"},
           {R"({"verb": "md-sync-action", "device": "md2", "action": "check"})", "no scrub target named 'md2'"},
           {R"({"verb": "md-sync-action", "device": "md5", "action": "check"})", "observe_only"},
       }) {
    auto host = canary::handle_host_verb(c.req, h.own, h.runner, 65534, 65534);  // as the daemon's user
    auto j = host ? nlohmann::json::parse(*host) : h.ask(c.req);
    EXPECT_FALSE(j.value("ok", true)) << c.req << " -> " << j.dump();
    EXPECT_NE(j.value("refused", "").find(c.why), std::string::npos) << c.req << " -> " << j.dump();
  }
  EXPECT_EQ(sync_action(h.dir.path(), "md1"), "check\n") << "somebody else's check was stopped";
  for (const char* dev : {"md2", "md3", "md5", "md7"}) EXPECT_EQ(sync_action(h.dir.path(), dev), "idle\n") << dev;
}

// A check the helper started is the one it may end; the scrub of another target or one it did not
// start stays untouched.
TEST(ScrubHelperVerbs, EndsOnlyTheCheckItStarted) {
  HelperHost h("scrub:\n  filesystems: [md]\n");
  md_array(h.dir.path(), "md0", "idle");
  auto j = h.ask(R"({"verb": "scrub-start", "target": "md0"})");
  ASSERT_TRUE(j.value("ok", false)) << j.dump();
  EXPECT_EQ(sync_action(h.dir.path(), "md0"), "check\n");
  j = h.ask(R"({"verb": "scrub-cancel", "target": "md0"})");
  EXPECT_TRUE(j.value("ok", false)) << j.dump();
  EXPECT_EQ(sync_action(h.dir.path(), "md0"), "idle\n");
  // Somebody else starts a check now: it is theirs.
  write_text(h.dir / "sys/block/md0/md/sync_action", "check\n");
  j = h.ask(R"({"verb": "scrub-cancel", "target": "md0"})");
  EXPECT_FALSE(j.value("ok", true)) << j.dump();
  EXPECT_EQ(sync_action(h.dir.path(), "md0"), "check\n");
}

// A detached job the helper recorded must be named to be paused or canceled: the target alone is
// not enough.
TEST(ScrubHelperVerbs, PauseAndCancelNeedTheRecordedJob) {
  HelperHost h("scrub:\n  filesystems: [btrfs]\n");
  h.runner.answer("btrfs scrub status -d -R /mnt/r1",
                  testing::fixture("written/btrfs/scrub-status-running-large-fs-progs-6.17.txt"));
  h.runner.answer("btrfs scrub cancel /mnt/r1", "");
  h.record_job_4242();
  for (const std::string req : {R"({"verb": "scrub-cancel", "target": "/mnt/r1"})", R"({"verb": "scrub-pause", "target": "/mnt/r1"})"}) {
    auto j = h.ask(req);
    EXPECT_FALSE(j.value("ok", true)) << req << " -> " << j.dump();
    EXPECT_NE(j.value("refused", "").find("the scrub job started here is 4242"), std::string::npos) << j.dump();
  }
  EXPECT_EQ(h.scrub_commands(), 0);
}

TEST(ScrubHelperAnswer, TypedAndChecked) {
  auto good = parse_scrub_helper_answer(
      R"({"ok": true, "result": "started the scrub of /m", "job": {"pid": 77, "dir": "/var/lib/h/scrub/jobs/btrfs__m"}, "pause_unsupported": false})");
  ASSERT_TRUE(good) << good.error();
  EXPECT_TRUE(good->ok);
  EXPECT_EQ(good->job_pid, 77);
  EXPECT_EQ(good->job_dir, "/var/lib/h/scrub/jobs/btrfs__m");
  EXPECT_EQ(good->pause_unsupported, std::optional<bool>(false));
  auto no = parse_scrub_helper_answer(R"({"ok": false, "refused": "why", "pause_unsupported": true})");
  ASSERT_TRUE(no) << no.error();
  EXPECT_FALSE(no->ok);
  EXPECT_EQ(no->text, "why");
  EXPECT_EQ(no->pause_unsupported, std::optional<bool>(true));
  // What the helper itself writes reads back unchanged.
  ScrubHelperAnswer mine{true, "paused", 9, "/s/scrub/jobs/zfs_tank", true, ErrorKind::failed};
  auto back = parse_scrub_helper_answer(scrub_helper_answer(mine));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->job_pid, 9);
  EXPECT_EQ(back->job_dir, mine.job_dir);
  // A refusal's kind, so that the daemon decides on what the helper's driver said; failed is no key.
  for (auto kind : {ErrorKind::failed, ErrorKind::refused, ErrorKind::in_use, ErrorKind::not_installed}) {
    ScrubHelperAnswer refusal{false, "scrub tool not found", 0, "", std::nullopt, kind};
    const auto line = scrub_helper_answer(refusal);
    EXPECT_EQ(line.find("\"kind\"") != std::string::npos, kind != ErrorKind::failed) << line;
    auto read = parse_scrub_helper_answer(line);
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(read->kind, kind) << line;
    EXPECT_EQ(read->text, "scrub tool not found");
  }
  auto missing = parse_scrub_helper_answer(R"({"ok": false, "refused": "x", "kind": "not_installed"})");
  ASSERT_TRUE(missing) << missing.error();
  EXPECT_EQ(missing->kind, ErrorKind::not_installed);
  for (const std::string bad : {
           "", "[]", "not json", R"({"result": "x"})", R"({"ok": "true", "result": "x"})", R"({"ok": true})",
           R"({"ok": true, "result": 5})", R"({"ok": false, "result": "x"})", R"({"ok": true, "result": "x", "extra": 1})",
           R"({"ok": true, "result": "x", "pause_unsupported": "yes"})",
           R"({"ok": true, "result": "x", "job": {"pid": 0, "dir": "/a/b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": -4, "dir": "/a/b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": "4", "dir": "/a/b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4.5, "dir": "/a/b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 99999999999, "dir": "/a/b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4, "dir": "a/b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4, "dir": "/a/../etc"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4, "dir": "/a/./b"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4, "dir": "/"}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4}})",
           R"({"ok": true, "result": "x", "job": {"pid": 4, "dir": "/a/b", "uid": 0}})",
           R"({"ok": false, "refused": "x", "job": {"pid": 4, "dir": "/a/b"}})",
           R"({"ok": false, "refused": "x", "kind": "missing"})",
           R"({"ok": false, "refused": "x", "kind": "Not_Installed"})",
           R"({"ok": false, "refused": "x", "kind": ""})",
           R"({"ok": false, "refused": "x", "kind": 3})",
           R"({"ok": false, "refused": "x", "kind": null})",
           R"({"ok": true, "result": "x", "kind": "not_installed"})",
       })
    EXPECT_FALSE(parse_scrub_helper_answer(bad)) << bad;
}

TEST(ScrubHelperRoute, TheRuleIsAHelperAndNotRoot) {
  EXPECT_TRUE(actions_via_helper("/run/fsaudit/helper.sock", 999));
  EXPECT_FALSE(actions_via_helper("/run/fsaudit/helper.sock", 0)) << "root acts itself";
  EXPECT_FALSE(actions_via_helper("", 999)) << "no helper: act (and fail with the host's reason)";
  EXPECT_EQ(scrub_helper_request("scrub-pause", "/m", 12), R"({"job":"12","target":"/m","verb":"scrub-pause"})");
  EXPECT_EQ(scrub_helper_request("scrub-start", "tank", 0), R"({"target":"tank","verb":"scrub-start"})");
}

}  // namespace
}  // namespace fsaudit::scrub
