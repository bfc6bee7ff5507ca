// fsauditd on a private dbus-daemon with the shipped policy: every method, the JobFinished signal,
// refused callers (nobody; group adm may read but not change), bad arguments, and fsauditctl's
// exit codes and messages.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/dbus/service.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/private_bus.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;
using nlohmann::json;

namespace {

std::string ctl_binary() { return FSAUDITCTL_BINARY; }

class DBusApi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the refused-caller checks switch to uid nobody";
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
    // The name is taken right after the listener starts; wait until it answers.
    for (int i = 0; i < 50 && ctl({"status"}).exit_code != 0; ++i) DaemonProcess::sleep_ms(100);
  }
  Cmd ctl(std::vector<std::string> args, const std::string& as = "") { return run_ctl(ctl_binary(), bus_->address(), args, as); }
  TempDir dir_;
  std::unique_ptr<PrivateBus> bus_;
  std::unique_ptr<DaemonProcess> daemon_;
  int port_ = 0;
};

}  // namespace

TEST_F(DBusApi, EveryMethodAnswers) {
  Bus bus(bus_->address());
  sd_bus_message* m = nullptr;
  std::string msg;
  ASSERT_EQ(bus.call("GetStatus", &m, &msg, ""), "") << msg;
  const char* s = nullptr;
  ASSERT_GE(sd_bus_message_read(m, "s", &s), 0);
  auto st = json::parse(s);
  sd_bus_message_unref(m);
  EXPECT_EQ(st["schema"], "fsaudit.status/v1");
  ASSERT_EQ(st["targets"].size(), 1u);
  EXPECT_EQ(st["targets"][0]["name"], "scratch");

  ASSERT_EQ(bus.call("ListTargets", &m, &msg, ""), "") << msg;
  const char *name = nullptr, *fs = nullptr, *health = nullptr, *problems = nullptr;
  ASSERT_GE(sd_bus_message_enter_container(m, 'a', "(ssss)"), 0);
  ASSERT_GT(sd_bus_message_read(m, "(ssss)", &name, &fs, &health, &problems), 0);
  EXPECT_STREQ(name, "scratch");
  sd_bus_message_unref(m);

  ASSERT_EQ(bus.call("GetTarget", &m, &msg, "s", "scratch"), "") << msg;
  ASSERT_GE(sd_bus_message_read(m, "s", &s), 0);
  EXPECT_EQ(json::parse(s)["name"], "scratch");
  sd_bus_message_unref(m);

  ASSERT_EQ(bus.call("ListProbes", &m, &msg, ""), "") << msg;
  ASSERT_GE(sd_bus_message_enter_container(m, 'a', "(ssxxas)"), 0);
  int probes = 0;
  while (sd_bus_message_skip(m, "(ssxxas)") > 0) ++probes;
  EXPECT_GE(probes, 5);
  sd_bus_message_unref(m);

  char* version = nullptr;
  sd_bus_error e = SD_BUS_ERROR_NULL;
  ASSERT_GE(sd_bus_get_property_string(bus.b, fsaudit::dbus::kBusName, fsaudit::dbus::kObjectPath, fsaudit::dbus::kInterface,
                                       "Version", &e, &version), 0);
  EXPECT_STREQ(version, "0.1.0");
  free(version);

  // RunProbe: a job id, then JobFinished and GetJob say how it ended.
  ASSERT_TRUE(bus.watch_jobs());
  ASSERT_EQ(bus.call("RunProbe", &m, &msg, "ss", "capacity", "scratch"), "") << msg;
  uint64_t job = 0;
  sd_bus_message_read(m, "t", &job);
  sd_bus_message_unref(m);
  EXPECT_GT(job, 0u);
  auto fin = bus.wait_finished(job, 60);
  EXPECT_TRUE(fin.arrived) << daemon_->log();
  EXPECT_EQ(fin.state, "done");
  EXPECT_EQ(fin.result, "ok");
  ASSERT_EQ(bus.call("GetJob", &m, &msg, "t", job), "") << msg;
  const char *kind = nullptr, *subject = nullptr, *state = nullptr, *result = nullptr;
  sd_bus_message_read(m, "ssss", &kind, &subject, &state, &result);
  EXPECT_STREQ(kind, "probe");
  EXPECT_STREQ(subject, "capacity on scratch");
  EXPECT_STREQ(state, "done");
  sd_bus_message_unref(m);

  EXPECT_EQ(bus.call("Reload", &m, &msg, ""), "") << msg;
  sd_bus_message_unref(m);
  EXPECT_EQ(daemon_->wait_for([](const std::string&) { return false; }, 1).empty(), false);
  EXPECT_NE(daemon_->log().find("configuration reloaded"), std::string::npos) << daemon_->log();

  // No canary is configured here: RunCanary and InitCanary name what is.
  EXPECT_EQ(bus.call("RunCanary", &m, &msg, "s", "nope"), "org.fsaudit.Error.UnknownCanary");
  EXPECT_NE(msg.find("no canary named 'nope'"), std::string::npos) << msg;
  EXPECT_EQ(bus.call("InitCanary", &m, &msg, "s", "nope"), "org.fsaudit.Error.UnknownCanary");
  // scratch is no scrub target (no filesystem that scrubs): the error names what is.
  EXPECT_EQ(bus.call("Scrub", &m, &msg, "ss", "start", "scratch"), "org.fsaudit.Error.UnknownTarget");
  EXPECT_NE(msg.find("no scrub target named 'scratch'; scrub targets: "), std::string::npos) << msg;
  EXPECT_EQ(bus.call("Scrub", &m, &msg, "ss", "explode", "scratch"), "org.freedesktop.DBus.Error.InvalidArgs");
  EXPECT_NE(msg.find("start, pause or cancel"), std::string::npos) << msg;
}

TEST_F(DBusApi, BadArgumentsGetUsefulErrors) {
  Bus bus(bus_->address());
  sd_bus_message* m = nullptr;
  std::string msg;
  EXPECT_EQ(bus.call("GetTarget", &m, &msg, "s", "/nowhere"), "org.fsaudit.Error.UnknownTarget");
  EXPECT_NE(msg.find("known: scratch"), std::string::npos) << msg;
  EXPECT_EQ(bus.call("RunProbe", &m, &msg, "ss", "zfz", ""), "org.fsaudit.Error.UnknownProbe");
  EXPECT_NE(msg.find("no probe named 'zfz'; known: capacity"), std::string::npos) << msg;
  EXPECT_EQ(bus.call("RunProbe", &m, &msg, "ss", "capacity", "/nowhere"), "org.fsaudit.Error.UnknownTarget");
  EXPECT_NE(msg.find("it runs on: scratch"), std::string::npos) << msg;
  EXPECT_EQ(bus.call("GetJob", &m, &msg, "t", uint64_t{999999}), "org.fsaudit.Error.UnknownJob");
  EXPECT_EQ(bus.call("GetTarget", &m, &msg, "i", 5), "org.freedesktop.DBus.Error.InvalidArgs");

  auto r = ctl({"run", "zfz"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("no probe named 'zfz'"), std::string::npos) << r.err;
  r = ctl({"explain", "/nowhere"});
  EXPECT_EQ(r.exit_code, 5);
  r = ctl({"canary", "status", "nope"});
  EXPECT_EQ(r.exit_code, 5);
  r = ctl({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: fsauditctl"), std::string::npos);
  r = ctl({"scrub", "start", "scratch"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("no scrub target named 'scratch'"), std::string::npos) << r.err;
}

TEST_F(DBusApi, PolicyRefusesCallersWhoMayNotAsk) {
  auto r = ctl({"status"}, "nobody");
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  r = ctl({"status"}, "adm");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("scratch"), std::string::npos);
  r = ctl({"explain", "scratch"}, "adm");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (std::vector<std::string> change : {std::vector<std::string>{"reload"}, {"run", "capacity", "scratch"}, {"canary", "init", "x"}}) {
    r = ctl(change, "adm");
    EXPECT_EQ(r.exit_code, 4) << change[0] << ": " << r.err;
  }
}

TEST_F(DBusApi, CtlCommandsAgainstTheDaemon) {
  auto r = ctl({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);  // no colour into a pipe
  EXPECT_NE(r.out.find("FILESYSTEM"), std::string::npos);
  r = ctl({"--json", "targets"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)[0]["name"], "scratch");
  r = ctl({"--json", "probes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool capacity = false;
  for (const auto& p : json::parse(r.out)) capacity |= p["name"] == "capacity" && p["targets"][0] == "scratch";
  EXPECT_TRUE(capacity) << r.out;
  r = ctl({"run", "capacity", "scratch", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("done: capacity on scratch: ok"), std::string::npos) << r.out;
  r = ctl({"--json", "run", "mount", "scratch", "--wait"});
  EXPECT_EQ(json::parse(r.out)["state"], "done") << r.out;
  r = ctl({"--color=always", "status"});
  EXPECT_NE(r.out.find("\x1b["), std::string::npos);
  r = ctl({"scrub", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl({"canary", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl({"reload"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(DBusCtl, SaysWhenTheDaemonIsNotRunning) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  PrivateBus bus(dir.path());
  auto r = run({ctl_binary(), "--bus", bus.address(), "status"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("fsauditd is not running"), std::string::npos) << r.err;
  r = run({ctl_binary(), "--bus", "unix:path=" + (dir / "no-such-socket").string(), "status"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
}
