// The hostile daemon, scrub part: the real fsaudit-helper behind a private socket, asked by a client
// running as the daemon's user (nobody here) that forges every field of the scrub verbs the daemon
// controls. Each forged request is refused with a reason, and nothing is started or stopped: the md
// arrays' sysfs files (a fixture: no md driver here) keep their contents and the fake zpool/btrfs
// record no scrub command. The helper's own config excludes, observe_only's and degrades targets.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "daemon/core/strings.hpp"
#include "tests/canary/helper_socket.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::scrub {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class HostileScrubDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    // Root: the helper trusts only a root-owned config, and the client must be another user.
    FSAUDIT_LAB_NEEDS(::geteuid() != 0 ? std::optional<std::string>("needs root (the helper and a client of another uid)")
                                       : std::nullopt);
    ::chmod(d_.path().c_str(), 0755);
    md("md0", "idle");
    md("md1", "check");  // somebody else's check
    md("md2", "idle");   // excluded by name
    md("md3", "idle", "1");
    md("md5", "idle");  // observe_only
    md("md7", "idle");  // mounted at an excluded mount point
    fs::create_directories(d_ / "proc/self");
    testing::write_text(d_ / "proc/self/mountinfo",
                        "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                        "40 22 9:7 / /srv/private rw,relatime shared:20 - ext4 /dev/md7 rw\n");
    // zpool and btrfs that record every call and know two pools: tank (scrubbing, not by fsaudit)
    // and secret (excluded).
    fs::create_directories(d_ / "bin");
    std::string status;
    for (const char* pool : {"tank", "secret"})
      status += std::string("  pool: ") + pool +
                "\n state: ONLINE\n  scan: scrub in progress since Sat Nov 18 01:00:00 2023\n"
                "\t1G / 10G scanned, 1G / 10G issued at 100M/s\n\t0B repaired, 10.00% done, 00:01:30 to go\n"
                "config:\n\n\tNAME        STATE     READ WRITE CKSUM\n\t" +
                pool + "        ONLINE       0     0     0\n\t  /tmp/a    ONLINE       0     0     0\n\nerrors: No known data errors\n\n";
    testing::write_text(d_ / "zpool-status.txt", status);
    tool("zpool", "if [ \"$1\" = status ]; then cat " + (d_ / "zpool-status.txt").string() + "; exit 0; fi\n");
    tool("btrfs", "");
    auto yaml = "state_dir: " + (d_ / "helper-state").string() + "\ndbus_address: none\n" +
                "host: {sysfs: " + (d_ / "sys").string() + ", procfs: " + (d_ / "proc").string() + "}\n" +
                "tools: {zpool: " + (d_ / "bin/zpool").string() + ", btrfs: " + (d_ / "bin/btrfs").string() + "}\n" +
                "targets: {exclude: [md2, secret, /srv/private]}\n"
                "scrub:\n  filesystems: [md, zfs, btrfs]\n  targets:\n    - match: md5\n      observe_only: true\n";
    cfg_ = testing::trusted_config(d_, yaml);
    fs::create_directories(d_ / "helper-state");
    ::chmod((d_ / "helper-state").c_str(), 0700);
    sock_ = std::make_unique<testing::HelperSocket>(
        d_.path(), std::vector<std::string>{FSAUDIT_HELPER_BINARY, "--config", cfg_.string(), "--allow-user", nobody_.name});
    ASSERT_TRUE(sock_->ok());
    before_ = snapshot();
  }
  void md(const std::string& dev, const std::string& action, const std::string& degraded = "0") {
    auto m = d_ / "sys/block" / dev / "md";
    fs::create_directories(m);
    testing::write_text(m / "level", "raid1\n");
    testing::write_text(m / "sync_action", action + "\n");
    testing::write_text(m / "degraded", degraded + "\n");
    testing::write_text(m / "mismatch_cnt", "0\n");
  }
  void tool(const std::string& name, const std::string& body) {
    auto p = d_ / "bin" / name;
    testing::write_text(p, "#!/bin/sh\necho \"" + name + " $*\" >> " + (d_ / "calls.log").string() + "\n" + body + "exit 0\n");
    ::chmod(p.c_str(), 0755);
  }
  // Every md sysfs action and every scrub command the tools were asked for.
  std::map<std::string, std::string> snapshot() {
    std::map<std::string, std::string> s;
    for (const char* dev : {"md0", "md1", "md2", "md3", "md5", "md7"})
      s[dev] = read_file(d_ / "sys/block" / dev / "md/sync_action").value_or("?");
    std::string scrubs;
    const std::string calls = read_file(d_ / "calls.log").value_or("");  // lines() views into it
    for (auto line : lines(calls))
      if (line.find("scrub") != std::string_view::npos && line.find("status") == std::string_view::npos)
        scrubs += std::string(line) + "\n";
    s["scrub commands"] = scrubs;
    return s;
  }
  // One raw request line as the daemon's user: the answer line, or the client's error.
  std::string ask(const std::string& line, uid_t uid) {
    return testing::run_as(uid, uid == 0 ? 0 : nobody_.gid, [&]() -> std::string {
      auto r = helper_exchange(sock_->path(), line, std::chrono::seconds(30));
      return r ? *r : "client error: " + r.error();
    });
  }
  nlohmann::json ask_json(const std::string& line) {
    auto out = ask(line, nobody_.uid);
    auto j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_discarded()) return nlohmann::json{{"ok", true}, {"unparsed", out}};
    return j;
  }

  TempDir d_{"fsaudit-hostile-scrub"};
  testing::Nobody nobody_;
  fs::path cfg_;
  std::unique_ptr<testing::HelperSocket> sock_;
  std::map<std::string, std::string> before_;
};

TEST_F(HostileScrubDaemon, EveryForgedScrubRequestIsRefusedAndNothingMoves) {
  struct Case {
    const char* what;
    std::string req, why;
  };
  const std::string huge(2000, '7');
  for (const auto& c : std::vector<Case>{
           {"unknown target", R"({"verb":"scrub-start","target":"md9"})", "no scrub target named 'md9'"},
           {"target excluded by name", R"({"verb":"scrub-start","target":"md2"})", "no scrub target named 'md2'"},
           {"array under an excluded mount", R"({"verb":"scrub-start","target":"md7"})", "no scrub target named 'md7'"},
           {"pool excluded by name", R"({"verb":"scrub-cancel","target":"secret"})", "no scrub target named 'secret'"},
           {"observe_only", R"({"verb":"scrub-start","target":"md5"})", "observe_only is set"},
           {"degraded", R"({"verb":"scrub-start","target":"md3"})", "degraded (allow_degraded: false)"},
           {"somebody else's md check", R"({"verb":"scrub-cancel","target":"md1"})", "was not started by fsaudit"},
           {"somebody else's md check, pause", R"({"verb":"scrub-pause","target":"md1"})", "was not started by fsaudit"},
           {"somebody else's md check, old verb", R"({"verb":"md-sync-action","device":"md1","action":"idle"})",
            "was not started by fsaudit"},
           {"excluded array, old verb", R"({"verb":"md-sync-action","device":"md2","action":"check"})",
            "no scrub target named 'md2'"},
           {"somebody else's pool scrub", R"({"verb":"scrub-cancel","target":"tank"})", "was not started by fsaudit"},
           {"another job's id", R"({"verb":"scrub-cancel","target":"tank","job":"1"})", "job 1 is not a scrub job started here"},
           {"negative job", R"({"verb":"scrub-cancel","target":"tank","job":"-5"})", "must be a process id"},
           {"oversized job", R"({"verb":"scrub-cancel","target":"tank","job":"99999999999999999999"})", "must be a process id"},
           {"numeric job", R"({"verb":"scrub-cancel","target":"tank","job":4242})", "must be a process id"},
           {"job on start", R"({"verb":"scrub-start","target":"md0","job":"4242"})", "unknown key \"job\""},
           {"path with ..", R"({"verb":"scrub-start","target":"../sys/block/md0"})", "no scrub target named"},
           {"device path", R"({"verb":"scrub-start","target":"/dev/md0"})", "no scrub target named"},
           {"commas", R"({"verb":"scrub-start","target":"md0,md1"})", "no scrub target named"},
           {"commas in a device", R"({"verb":"md-sync-action","device":"md0,md1","action":"check"})", "is not an md array"},
           {"extra key", R"({"verb":"scrub-start","target":"md0","tool":"/bin/sh"})", "unknown key \"tool\""},
           {"mistyped target", R"({"verb":"scrub-start","target":["md0"]})", "\"target\" (a string) is required"},
           {"oversized request", R"({"verb":"scrub-start","target":")" + huge + R"("})", "request longer than 1024 bytes"},
           {"not JSON", R"({"verb":"scrub-start","target":"md0")", "not JSON"},
       }) {
    auto j = ask_json(c.req);
    EXPECT_FALSE(j.value("ok", true)) << c.what << ": " << j.dump();
    EXPECT_NE(j.value("refused", "").find(c.why), std::string::npos) << c.what << ": " << j.dump();
  }
  EXPECT_EQ(snapshot(), before_) << "a refused request started or stopped a scrub";

  // What the config allows still works for the daemon, and its own check is the one it may end.
  auto j = ask_json(R"({"verb":"scrub-start","target":"md0"})");
  EXPECT_TRUE(j.value("ok", false)) << j.dump();
  EXPECT_EQ(read_file(d_ / "sys/block/md0/md/sync_action").value_or("?"), "check\n");
  j = ask_json(R"({"verb":"scrub-cancel","target":"md0"})");
  EXPECT_TRUE(j.value("ok", false)) << j.dump();
  EXPECT_EQ(read_file(d_ / "sys/block/md0/md/sync_action").value_or("?"), "idle\n");
  // An operator (root) may name somebody else's scrub.
  auto out = ask(R"({"verb":"scrub-cancel","target":"md1"})", 0);
  EXPECT_NE(out.find("\"ok\":true"), std::string::npos) << out;
  EXPECT_EQ(read_file(d_ / "sys/block/md1/md/sync_action").value_or("?"), "idle\n");
}

// A client that sends a byte every half second never completes its line within the helper's
// deadline: it is cut off at that absolute deadline (not after each quiet spell), and nothing runs.
TEST_F(HostileScrubDaemon, ASlowClientIsCutOffAtAnAbsoluteDeadline) {
  auto out = testing::run_as(nobody_.uid, nobody_.gid, [&]() -> std::string {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock_->path().c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "connect failed";
    const std::string req = "{\"verb\":\"scrub-start\",\"target\":\"md0\"}\n";
    auto t0 = std::chrono::steady_clock::now();
    std::string answer;
    for (std::size_t i = 0; i < req.size(); ++i) {
      (void)!::send(fd, &req[i], 1, MSG_NOSIGNAL);
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 500) > 0) {
        char buf[1024];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) answer.assign(buf, static_cast<std::size_t>(n));
        break;
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::close(fd);
    return std::to_string(secs) + " " + answer;
  });
  double secs = std::stod(out);
  EXPECT_LT(secs, 8.0) << "the helper kept reading a dribbling client: " << out;
  EXPECT_GE(secs, 4.5) << out;
  EXPECT_NE(out.find("no complete request line within 5000 ms"), std::string::npos) << out;
  EXPECT_EQ(snapshot(), before_) << "a cut-off request started a scrub";
}

}  // namespace
}  // namespace fsaudit::scrub
