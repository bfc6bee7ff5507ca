// fsaudit-helper's host verbs (probes/canary/helper_verbs_host.cpp): every request naming something
// the helper's own config, mount table or sysfs does not offer is refused and runs nothing; what it
// offers works through the real binary on a real unix socket, asked by an unprivileged caller.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <cmath>
#include <fstream>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/helper_protocol.hpp"
#include "tests/canary/helper_socket.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::canary {
namespace {

namespace fs = std::filesystem;
using testing::FakeRunner;
using testing::TempDir;

config::Config parse(const std::string& yaml) { return config::parse_config(yaml, "helper.yaml"); }

bool refused(const std::optional<std::string>& out, const std::string& part = "") {
  if (!out) return false;
  auto j = nlohmann::json::parse(*out);
  return !j.value("ok", true) && j.value("refused", std::string()).find(part) != std::string::npos;
}

// A sysfs tree with md arrays for md-sync-action (no md driver on the test machines).
void md_fixture(const fs::path& sys, const std::string& dev, const std::string& level, const std::string& action) {
  fs::create_directories(sys / "block" / dev / "md");
  testing::write_text(sys / "block" / dev / "md" / "level", level + "\n");
  testing::write_text(sys / "block" / dev / "md" / "sync_action", action + "\n");
}

TEST(HelperHostVerbs, RefuseWhatTheirOwnConfigDoesNotOfferAndRunNothing) {
  TempDir d("helper-verbs");
  md_fixture(d / "sys", "md0", "raid1", "idle");
  md_fixture(d / "sys", "md1", "raid0", "idle");
  fs::create_directories(d / "latency");
  auto own = parse("state_dir: " + (d / "state").string() + "\nhost: {sysfs: " + (d / "sys").string() +
                   "}\nscrub: {targets: [{match: md9, observe_only: true}]}\nlatency: {targets: [" +
                   (d / "latency").string() + "]}\ncanary: {canaries: [{name: only, fs: btrfs, devices: [/dev/null-none], "
                   "mountpoint: /srv/only}]}\n");
  md_fixture(d / "sys", "md9", "raid1", "idle");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"verb": "counters-clear", "canary": "ghost"})", "not a canary in the helper's config"},
      {R"({"verb": "counters-clear", "canary": "only", "mountpoint": "/"})", "unknown key \"mountpoint\""},
      {R"({"verb": "counters-clear", "canary": 1})", "must be a non-empty string"},
      {R"({"verb": "counters-clear"})", "\"canary\" (a string) is required"},
      {R"({"verb": "counters-clear", "canary": "only"})", "not verified, nothing cleared"},
      {R"({"verb": "btrfs-device-stats", "mountpoint": "/"})", "not a btrfs mount point"},
      {R"({"verb": "btrfs-device-stats", "mountpoint": "/srv/only"})", "not a btrfs mount point"},
      {R"({"verb": "btrfs-device-stats", "mountpoint": ["/"]})", "must be a non-empty string"},
      {R"({"verb": "btrfs-scrub-status", "mountpoint": "/"})", "not a btrfs mount point"},
      {R"({"verb": "btrfs-scrub-status", "mountpoint": "/", "args": "-z"})", "unknown key \"args\""},
      {R"({"verb": "btrfs-device-stats", "mountpoint": "/", "tools": {"btrfs": "/bin/sh"}})", "unknown key \"tools\""},
      {R"({"verb": "md-sync-action", "device": "md0", "action": "repair"})", "not check or idle"},
      {R"({"verb": "md-sync-action", "device": "md0"})", "\"action\" (a string) is required"},
      {R"({"verb": "md-sync-action", "device": "md7", "action": "check"})", "not an md array"},
      {R"({"verb": "md-sync-action", "device": "md1", "action": "check"})", "not an md array with redundancy"},
      {R"({"verb": "md-sync-action", "device": "../block/md0", "action": "check"})", "not an md array"},
      {R"({"verb": "md-sync-action", "device": "md0/../md0", "action": "check"})", "not an md array"},
      {R"({"verb": "md-sync-action", "device": "md9", "action": "check"})", "does not let fsaudit scrub"},
      {R"({"verb": "md-sync-action", "device": "md0", "action": "idle"})", "not a check: left alone"},
      {R"({"verb": "md-sync-action", "device": "md0", "action": "check", "sysfs": "/tmp"})", "unknown key \"sysfs\""},
      {R"({"verb": "latency-file-create", "target": "/"})", "not where the helper's config"},
      {R"({"verb": "latency-file-create", "target": "/etc"})", "not where the helper's config"},
      {R"({"verb": "latency-file-create", "target": ")" + (d / "latency" / "..").string() + "\"}",
       "not where the helper's config"},
      {R"({"verb": "latency-file-create", "target": ""})", "must be a non-empty string"},
      {R"({"verb": "latency-file-create", "target": true})", "must be a non-empty string"},
  };
  FakeRunner runner;
  for (const auto& [req, why] : cases) {
    auto out = handle_host_verb(req, own, runner, 4242, 4242);
    EXPECT_TRUE(refused(out, why)) << req << " -> " << out.value_or("(not a host verb)");
  }
  EXPECT_TRUE(runner.calls.empty()) << "a refused request ran " << runner.calls[0];
  EXPECT_EQ(read_file(d / "sys/block/md0/md/sync_action").value_or("?"), "idle\n");
  EXPECT_EQ(read_file(d / "sys/block/md9/md/sync_action").value_or("?"), "idle\n");
  EXPECT_FALSE(fs::exists(d / "latency" / ".fsaudit"));
  // Not a host verb: left to the canary dispatch, which refuses it there.
  for (const char* other : {R"({"verb": "canary-run", "canary": "only"})", R"({"verb": "exec", "cmd": "sh"})", "md-sync-action md0", ""})
    EXPECT_FALSE(handle_host_verb(other, own, runner, 0, 0)) << other;
}

using testing::HelperSocket;
using testing::Nobody;
using testing::trusted_config;

// helper_call (the daemon's own client) from a process running as `uid`; "ok: k=v ..." or "refused: why".
std::string ask_as(uid_t uid, gid_t gid, const std::string& sock, const std::string& verb,
                   const std::map<std::string, std::string>& args) {
  return testing::run_as(uid, gid, [&] {
    auto r = helper_call(sock, verb, args, std::chrono::seconds(120));
    if (!r) return "refused: " + r.error();
    std::string out = "ok:";
    for (const auto& [k, v] : *r) out += " " + k + "=" + v;
    return out;
  });
}

TEST(HelperHostVerbs, LatencyFileCreateMakesTheCallersProbeFileWhereTheConfigSays) {
  if (::geteuid() != 0) GTEST_SKIP() << "the helper trusts only a root-owned config and chowns to its caller";
  TempDir d("helper-latency");
  Nobody nobody;
  auto target = d / "data";
  fs::create_directories(target);
  ::chmod(target.c_str(), 0755);  // root's: the caller cannot create anything here itself
  fs::create_directories(d / "other");
  auto cfg = trusted_config(d, "state_dir: " + (d / "state").string() + "\nlatency: {targets: [" + target.string() + "]}\n");
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfg.string(), "--allow-user", nobody.name});

  auto out = ask_as(nobody.uid, nobody.gid, sock.path(), "latency-file-create", {{"target", (d / "other").string()}});
  EXPECT_NE(out.find("refused: the fsaudit helper refused latency-file-create: " + (d / "other").string() +
                     " is not where the helper's config"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(d / "other" / ".fsaudit"));
  // A symlink planted where the directory goes is not followed (and nothing is chowned through it).
  fs::create_symlink(d / "other", target / ".fsaudit");
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "latency-file-create", {{"target", target.string()}});
  EXPECT_NE(out.find("refused:"), std::string::npos) << out;
  struct stat st {};
  ASSERT_EQ(::stat((d / "other").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  fs::remove(target / ".fsaudit");
  // A root-owned directory already there was chowned to the caller (issue 29.6): anything root keeps
  // at that path became the daemon's. Refused, and it stays root's.
  fs::create_directories(target / ".fsaudit");
  { std::ofstream(target / ".fsaudit" / "root-secret") << "x"; }
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "latency-file-create", {{"target", target.string()}});
  EXPECT_NE(out.find("already exists and belongs to uid 0, not the caller"), std::string::npos) << out;
  ASSERT_EQ(::stat((target / ".fsaudit").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  fs::remove_all(target / ".fsaudit");

  out = ask_as(nobody.uid, nobody.gid, sock.path(), "latency-file-create", {{"target", target.string()}});
  EXPECT_NE(out.find("ok: dir=" + (target / ".fsaudit").string() + " file=" + (target / ".fsaudit/latency.probe").string()),
            std::string::npos)
      << out;
  ASSERT_EQ(::lstat((target / ".fsaudit").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, nobody.uid);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::lstat((target / ".fsaudit/latency.probe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_uid, nobody.uid);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Asked again (the file exists, the caller's already): the same answer, nothing else changes.
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "latency-file-create", {{"target", target.string()}});
  EXPECT_EQ(out.rfind("ok:", 0), 0u) << out;
  // A user the helper does not admit gets nothing.
  out = ask_as(4343, 4343, sock.path(), "latency-file-create", {{"target", target.string()}});
  EXPECT_NE(out.find("uid 4343 may not use the fsaudit helper"), std::string::npos) << out;
}

TEST(HelperHostVerbs, MdSyncActionStartsAndEndsOnlyACheckOfAnArrayItFoundItself) {
  if (::geteuid() != 0) GTEST_SKIP() << "the helper trusts only a root-owned config";
  TempDir d("helper-md");
  Nobody nobody;
  // No md driver here: a sysfs fixture stands in for /sys (the helper's own `host.sysfs`).
  md_fixture(d / "sys", "md0", "raid1", "idle");
  md_fixture(d / "sys", "md1", "raid5", "resync");
  auto cfg = trusted_config(d, "state_dir: " + (d / "state").string() + "\nhost: {sysfs: " + (d / "sys").string() + "}\n");
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfg.string(), "--allow-user", nobody.name});
  auto out = ask_as(nobody.uid, nobody.gid, sock.path(), "md-sync-action", {{"device", "md0"}, {"action", "check"}});
  EXPECT_NE(out.find("ok: action=check device=md0 was=idle"), std::string::npos) << out;
  EXPECT_EQ(read_file(d / "sys/block/md0/md/sync_action").value_or("?"), "check\n");
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "md-sync-action", {{"device", "md0"}, {"action", "idle"}});
  EXPECT_NE(out.find("ok: action=idle device=md0 was=check"), std::string::npos) << out;
  EXPECT_EQ(read_file(d / "sys/block/md0/md/sync_action").value_or("?"), "idle\n");
  // The kernel's own resync is never interrupted, and only arrays in sysfs exist.
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "md-sync-action", {{"device", "md1"}, {"action", "idle"}});
  EXPECT_NE(out.find("running \"resync\", not a check"), std::string::npos) << out;
  EXPECT_EQ(read_file(d / "sys/block/md1/md/sync_action").value_or("?"), "resync\n");
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "md-sync-action", {{"device", "md5"}, {"action", "check"}});
  EXPECT_NE(out.find("not an md array"), std::string::npos) << out;
}

TEST(HelperHostVerbs, CountersClearRefusesACanaryItCannotVerify) {
  if (::geteuid() != 0) GTEST_SKIP() << "the helper trusts only a root-owned config";
  TempDir d("helper-counters");
  Nobody nobody;
  auto cfg = trusted_config(d, "state_dir: " + (d / "state").string() +
                                   "\ncanary: {canaries: [{name: only, fs: btrfs, devices: [/dev/null-none], mountpoint: " +
                                   (d / "mnt").string() + "}]}\n");
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfg.string(), "--allow-user", nobody.name});
  auto out = ask_as(nobody.uid, nobody.gid, sock.path(), "counters-clear", {{"canary", "ghost"}});
  EXPECT_NE(out.find("\"ghost\" is not a canary in the helper's config"), std::string::npos) << out;
  // Configured but never initialised (so not verifiable): its mount point's filesystem is someone
  // else's, whose counters are real evidence.
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "counters-clear", {{"canary", "only"}});
  EXPECT_NE(out.find("canary only is not verified, nothing cleared"), std::string::npos) << out;
}

// A 128 MiB btrfs on a loop device, mounted at <dir>/mnt; both undone on scope exit.
struct LoopBtrfs {
  explicit LoopBtrfs(const TempDir& d) : loop(d.path(), "b.img", 128ull << 20), mount(formatted(loop, d / "mnt"), d / "mnt", "btrfs") {}
  static std::string formatted(const testing::LoopDevice& l, const fs::path& mnt) {
    if (!l.ok()) return "";
    testing::must({"mkfs.btrfs", "-f", "-q", l.device()});
    fs::create_directories(mnt);
    return l.device();
  }
  testing::LoopDevice loop;
  testing::Mount mount;
};

TEST(HelperHostVerbs, BtrfsDeviceStatsOfARealBtrfsMountOnly) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
  TempDir d("helper-btrfs");
  Nobody nobody;
  LoopBtrfs b(d);
  ASSERT_TRUE(b.mount.ok()) << b.mount.error();
  auto cfg = trusted_config(d, "state_dir: " + (d / "state").string() + "\n");
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfg.string(), "--allow-user", nobody.name});
  auto out = ask_as(nobody.uid, nobody.gid, sock.path(), "btrfs-device-stats", {{"mountpoint", (d / "mnt").string()}});
  ASSERT_EQ(out.rfind("ok:", 0), 0u) << out;
  auto text = out.substr(out.find(" out=") + 5);
  auto parsed = btrfs::parse_device_stats(text);
  ASSERT_TRUE(parsed) << parsed.error() << "\n" << text;
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ(parsed->at(0).device, b.loop.device());
  // The directory under the mount point is not a mount point; the root filesystem is not btrfs here.
  fs::create_directories(d / "mnt" / "sub");
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "btrfs-device-stats", {{"mountpoint", (d / "mnt" / "sub").string()}});
  EXPECT_NE(out.find("is not a btrfs mount point the helper's config"), std::string::npos) << out;
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "btrfs-device-stats", {{"mountpoint", d.path().string()}});
  EXPECT_NE(out.find("is not a btrfs mount point"), std::string::npos) << out;
}


// counters-clear on a real, initialised btrfs canary: cleared while it verifies; once its filesystem
// is unmounted (the mount point is then the parent filesystem's directory) nothing is cleared.
TEST(HelperHostVerbs, CountersClearClearsOnlyAVerifiedCanary) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
  TempDir d("helper-clear");
  Nobody nobody;
  LoopBtrfs b(d);
  ASSERT_TRUE(b.mount.ok()) << b.mount.error();
  auto yaml = "state_dir: " + (d / "state").string() + "\ncanary:\n  canaries:\n    - name: c1\n      fs: btrfs\n" +
              "      layout: single\n      devices: [" + b.loop.device() + "]\n      mountpoint: " + (d / "mnt").string() + "\n";
  auto cfg = trusted_config(d, yaml);
  ProcessRunner runner;
  auto init = init_canary(config::parse_config(yaml, cfg.string()), "c1", runner);
  ASSERT_TRUE(init) << init.error();
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfg.string(), "--allow-user", nobody.name});
  auto out = ask_as(nobody.uid, nobody.gid, sock.path(), "counters-clear", {{"canary", "c1"}});
  EXPECT_EQ(out, "ok: canary=c1 cleared=true");
  b.mount.unmount();
  out = ask_as(nobody.uid, nobody.gid, sock.path(), "counters-clear", {{"canary", "c1"}});
  EXPECT_NE(out.find("canary c1 is not verified, nothing cleared"), std::string::npos) << out;
}

// The daemon side: an unprivileged fsauditd (nobody) whose btrfs `scrub status` ioctl and latency
// probe file are refused by the host gets both through the helper, and its probes succeed.
TEST(HelperHostVerbs, UnprivilegedDaemonAsksTheHelperWhenTheHostRefuses) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  FSAUDIT_LAB_NEEDS(testing::lab_tool_missing("mkfs.btrfs", "btrfs-progs"));
  TempDir d("helper-daemon");
  Nobody nobody;
  LoopBtrfs b(d);
  ASSERT_TRUE(b.mount.ok()) << b.mount.error();
  ::chmod((d / "mnt").c_str(), 0755);  // root's: nobody cannot create the probe file itself
  fs::create_directories(d / "state");
  ASSERT_EQ(::chown((d / "state").c_str(), nobody.uid, nobody.gid), 0);
  auto yaml = "state_dir: " + (d / "state").string() + "\ndbus_address: none\ntargets: {include: [" + (d / "mnt").string() +
              "]}\nlatency: {probe_file_size: 1048576}\ncanary: {helper: " + (d / "helper.sock").string() + "}\n";
  auto cfg = trusted_config(d, yaml);
  // The helper keeps its own root-only state, as its unit gives it (--state-dir): it refuses the
  // daemon's, which nobody owns here.
  HelperSocket sock(d.path(), {FSAUDIT_HELPER_BINARY, "--config", cfg.string(), "--state-dir", (d / "helper-state").string(),
                               "--allow-user", nobody.name});
  auto once = [&] {
    return testing::run({"setpriv", "--reuid=" + std::to_string(nobody.uid), "--regid=" + std::to_string(nobody.gid),
                         "--clear-groups", FSAUDITD_BINARY, "--config", cfg.string(), "--once"},
                        300);
  };
  auto r = once();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The btrfs probe (per filesystem) succeeded: its series are there, and no fsaudit_probe_success
  // 0 (a per-filesystem probe has that series only while it fails).
  EXPECT_TRUE(std::isnan(testing::scrape_value(r.out, "fsaudit_probe_success", {{"probe", "btrfs"}})))
      << testing::scrape_lines(r.out, "fsaudit_probe") << r.err;
  EXPECT_FALSE(std::isnan(testing::scrape_value(r.out, "fsaudit_btrfs_allocated_bytes", {{"type", "data"}})))
      << testing::scrape_lines(r.out, "fsaudit_btrfs") << r.err;
  // btrfs health comes from sysfs (no privilege); the scrub status ioctl came through the helper.
  EXPECT_EQ(testing::scrape_value(r.out, "fsaudit_probe_success", {{"probe", "scrub"}}), 1)
      << testing::scrape_lines(r.out, "fsaudit_scrub") << r.err;
  EXPECT_EQ(testing::scrape_value(r.out, "fsaudit_scrub_running", {{"fs", "btrfs"}}), 0)
      << testing::scrape_lines(r.out, "fsaudit_scrub") << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat((d / "mnt/.fsaudit/latency.probe").c_str(), &st), 0) << testing::scrape_lines(r.out, "fsaudit_latency") << r.err;
  EXPECT_EQ(st.st_uid, nobody.uid);
  EXPECT_EQ(st.st_size, 1 << 20);  // filled by fsauditd itself once the helper made it
  EXPECT_EQ(testing::scrape_value(r.out, "fsaudit_probe_success", {{"probe", "latency"}}), 1)
      << testing::scrape_lines(r.out, "fsaudit_latency") << r.err;
  // Without the helper the same daemon fails those probes with the host's reason.
  auto no_helper = yaml.substr(0, yaml.find("canary:")) + "\n";
  fs::remove_all(d / "mnt/.fsaudit");
  testing::write_text(cfg, no_helper);
  r = once();
  EXPECT_TRUE(std::isnan(testing::scrape_value(r.out, "fsaudit_probe_success", {{"probe", "btrfs"}}))) << r.out;
  EXPECT_FALSE(std::isnan(testing::scrape_value(r.out, "fsaudit_btrfs_allocated_bytes", {{"type", "data"}}))) << r.out;
  EXPECT_EQ(testing::scrape_value(r.out, "fsaudit_probe_success", {{"probe", "scrub"}}), 0)
      << testing::scrape_lines(r.out, "fsaudit_scrub") << r.err;
  EXPECT_FALSE(fs::exists(d / "mnt/.fsaudit/latency.probe"));
}

}  // namespace
}  // namespace fsaudit::canary
