// fsauditctl's text and JSON output from the real fsauditd on a private dbus-daemon: the tables and
// sentences must say what the daemon's JSON says about a filesystem the test made, and what the
// kernel says about it (statvfs). Nothing here is a stored copy of fsaudit's output.
#include <gtest/gtest.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daemon/core/units.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/private_bus.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;
using nlohmann::json;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

std::vector<std::string> words(const std::string& l) {
  std::vector<std::string> v;
  std::istringstream in(l);
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

class CtlOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the private bus's policy file is root's";
    bus_ = std::make_unique<PrivateBus>(dir_.path());
    ASSERT_FALSE(bus_->address().empty());
    port_ = free_port();
    std::filesystem::create_directories(dir_ / "scratch");
    daemon_ = std::make_unique<DaemonProcess>(
        dir_.path(),
        "listen: 127.0.0.1:" + std::to_string(port_) + "\nstate_dir: " + (dir_ / "state").string() +
            "\ndbus_address: " + bus_->address() + "\ntargets: {discover: false, explicit: [{path: " + (dir_ / "scratch").string() +
            ", name: scratch}]}\nlatency: {enabled: false}\n",
        port_);
    daemon_->wait_for_metric("fsaudit_filesystem_size_bytes", {{"target", "scratch"}});
    for (int i = 0; i < 50 && ctl({"status"}).exit_code != 0; ++i) DaemonProcess::sleep_ms(100);
  }
  Cmd ctl(std::vector<std::string> args) { return run_ctl(FSAUDITCTL_BINARY, bus_->address(), args); }
  json ctl_json(std::vector<std::string> args) {
    args.insert(args.begin(), "--json");
    auto r = ctl(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  TempDir dir_;
  std::unique_ptr<PrivateBus> bus_;
  std::unique_ptr<DaemonProcess> daemon_;
  int port_ = 0;
};

}  // namespace

TEST_F(CtlOutput, StatusTableSaysWhatTheDaemonAndTheKernelSay) {
  json s = ctl_json({"status"});
  ASSERT_EQ(s["schema"], "fsaudit.status/v1");
  ASSERT_EQ(s["targets"].size(), 1u) << s.dump(2);
  const json& t = s["targets"][0];
  EXPECT_EQ(t["name"], "scratch");
  struct statvfs v {};
  ASSERT_EQ(::statvfs((dir_ / "scratch").c_str(), &v), 0);
  double size = static_cast<double>(v.f_blocks) * static_cast<double>(v.f_frsize);
  ASSERT_TRUE(t["size_bytes"].is_number()) << t.dump(2);
  EXPECT_DOUBLE_EQ(t["size_bytes"].get<double>(), size);

  auto r = ctl({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ls = lines_of(r.out);
  ASSERT_GE(ls.size(), 4u) << r.out;
  EXPECT_EQ(ls[0].rfind("fsaudit " + s["version"].get<std::string>() + ": " + s["overall"].get<std::string>() + " (", 0), 0u) << ls[0];
  EXPECT_TRUE(ls[1].empty());
  EXPECT_EQ(words(ls[2]), (std::vector<std::string>{"FILESYSTEM", "FS", "HEALTH", "USED", "DAYS-TO-FULL", "CANARY", "LAST-SCRUB", "FSYNC-P99"}));
  auto row = words(ls[3]);
  ASSERT_GE(row.size(), 4u) << ls[3];
  EXPECT_EQ(row[0], "scratch");
  EXPECT_EQ(row[1], t["fs"].get<std::string>());
  EXPECT_EQ(row[2], t["health"].get<std::string>());
  char used[16];
  std::snprintf(used, sizeof used, "%.0f%%", t["used_ratio"].get<double>() * 100);
  EXPECT_EQ(row[3], used);
  // Columns line up: each header starts where its column's cells start.
  EXPECT_EQ(ls[2].find("HEALTH"), ls[3].find(row[2], row[0].size() + row[1].size()));

  // Colour only when asked, and never in --json.
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);
  auto coloured = ctl({"--color=always", "status"});
  EXPECT_NE(coloured.out.find("\x1b["), std::string::npos);
  EXPECT_EQ(lines_of(coloured.out).size(), ls.size());
  EXPECT_EQ(ctl({"--color=always", "--json", "status"}).out.find("\x1b["), std::string::npos);

  json targets = ctl_json({"targets"});
  EXPECT_EQ(targets, s["targets"]);
  r = ctl({"targets"});
  ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), 2u) << r.out;
  EXPECT_EQ(words(ls[0]), (std::vector<std::string>{"TARGET", "FS", "DEVICE", "HEALTH", "PROBLEMS"}));
  EXPECT_EQ(words(ls[1])[0], "scratch");
}

TEST_F(CtlOutput, ExplainSaysWhatTheDaemonKnowsInSentences) {
  json t = ctl_json({"explain", "scratch"});
  auto r = ctl({"explain", "scratch"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ls = lines_of(r.out);
  ASSERT_GE(ls.size(), 4u) << r.out;
  std::string fs = t["fs"].get<std::string>();
  EXPECT_EQ(ls[0].rfind("scratch is a" + std::string(std::string("aeiox").find(fs[0]) != std::string::npos ? "n " : " ") + fs + " filesystem", 0), 0u) << ls[0];
  for (const auto& l : ls) {
    ASSERT_FALSE(l.empty()) << r.out;
    EXPECT_NE(l[0], ',') << "a fragment: " << l;
  }
  // The free-space sentence carries the daemon's numbers.
  std::string space = fsaudit::format_bytes(t["avail_bytes"].get<double>()) + " of " + fsaudit::format_bytes(t["size_bytes"].get<double>()) + " are free";
  EXPECT_NE(r.out.find(space), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(t["health"] == "ok" ? "Its health is ok" : "Its health is " + t["health"].get<std::string>() + " because:"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No canary tests"), std::string::npos) << "no canary is configured here: " << r.out;
}

TEST_F(CtlOutput, ProbesTableListsTheSchedule) {
  json p = ctl_json({"probes"});
  ASSERT_GE(p.size(), 3u);
  auto r = ctl({"probes"});
  auto ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), p.size() + 1) << r.out;
  EXPECT_EQ(words(ls[0]), (std::vector<std::string>{"PROBE", "SCOPE", "INTERVAL", "TIMEOUT", "TARGETS"}));
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto row = words(ls[i + 1]);
    EXPECT_EQ(row[0], p[i]["name"].get<std::string>());
    EXPECT_EQ(row[1], p[i]["scope"].get<std::string>());
  }
}
