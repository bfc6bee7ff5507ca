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

TEST(ScrubHelperVerbs, CancelsAScrubOfATargetItsConfigHas) {
  HelperHost h("scrub:\n  filesystems: [btrfs]\n");
  h.runner.answer("btrfs scrub status -d -R /mnt/r1",
                  testing::fixture("written/btrfs/scrub-status-running-large-fs-progs-6.17.txt"));
  h.runner.answer("btrfs scrub cancel /mnt/r1", "");
  auto j = h.ask(R"({"verb": "scrub-cancel", "target": "/mnt/r1"})");
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
  std::filesystem::create_directories(h.own.state_dir / "scrub");
  TargetState st;
  st.running = st.by_us = true;
  st.job_pid = 4242;
  st.job_dir = (h.own.state_dir / "scrub/jobs/btrfs__mnt_r1").string();
  write_text(h.own.state_dir / "scrub/btrfs__mnt_r1.state", st.serialize());
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
  ScrubHelperAnswer mine{true, "paused", 9, "/s/scrub/jobs/zfs_tank", true};
  auto back = parse_scrub_helper_answer(scrub_helper_answer(mine));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->job_pid, 9);
  EXPECT_EQ(back->job_dir, mine.job_dir);
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
