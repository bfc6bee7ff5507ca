// fsauditd on a private dbus-daemon with the shipped policy: every method, the JobFinished signal and
// who receives it, refused callers (nobody; group adm may read but not change), bad arguments, and
// fsauditctl's exit codes, messages, tables and sentences against what the daemon itself reports.
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "daemon/core/files.hpp"
#include "daemon/core/units.hpp"
#include "daemon/dbus/service.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/private_bus.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;
using fsaudit::read_file;
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

  // Reload answers once the daemon has reloaded: the log already says so when the reply arrives.
  ASSERT_EQ(bus.call("Reload", &m, &msg, ""), "") << msg;
  const char* said = nullptr;
  ASSERT_GE(sd_bus_message_read(m, "s", &said), 0);
  EXPECT_EQ(std::string(said), "configuration reloaded from " + daemon_->config_path().string());
  sd_bus_message_unref(m);
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

// Issue 30: `fsauditctl reload` exited 0 when the daemon then rejected the file; the reason was only
// in the journal. The reply now carries the verdict of the reload the call caused.
TEST_F(DBusApi, ReloadSaysWhetherTheConfigurationWasAccepted) {
  std::string good = read_file(daemon_->config_path()).value();
  auto r = ctl({"reload"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "configuration reloaded from " + daemon_->config_path().string() + "\n");

  write_text(daemon_->config_path(), good + "workers: many\n");
  r = ctl({"reload"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("configuration rejected, the previous one keeps running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("workers"), std::string::npos) << "the reason names the bad key: " << r.err;
  Bus bus(bus_->address());
  sd_bus_message* m = nullptr;
  std::string msg;
  EXPECT_EQ(bus.call("Reload", &m, &msg, ""), "org.fsaudit.Error.ReloadRejected");
  EXPECT_NE(msg.find("workers"), std::string::npos) << msg;
  r = ctl({"--json", "reload"});
  EXPECT_EQ(r.exit_code, 1);
  // The rejected reload kept the daemon answering with the old configuration.
  EXPECT_EQ(ctl({"status"}).exit_code, 0);

  write_text(daemon_->config_path(), good);
  r = ctl({"--json", "reload"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["reload"], "accepted");
  EXPECT_EQ(j["message"], "configuration reloaded from " + daemon_->config_path().string());
}

// `jobs` and `job ID` (text and --json) show the jobs this test caused, as the daemon reports them.
TEST_F(DBusApi, JobsAndJobShowWhatWasAsked) {
  auto r = ctl({"run", "capacity", "scratch", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  unsigned long long id = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "job %llu done", &id), 1) << r.out;
  r = ctl({"run", "mount", "scratch", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = ctl({"--json", "jobs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto jobs = json::parse(r.out);
  ASSERT_EQ(jobs.size(), 2u) << r.out;
  EXPECT_EQ(jobs[0]["job"], id);
  EXPECT_EQ(jobs[0]["kind"], "probe");
  EXPECT_EQ(jobs[0]["subject"], "capacity on scratch");
  EXPECT_EQ(jobs[0]["state"], "done");
  EXPECT_EQ(jobs[0]["result"], "ok");
  EXPECT_LE(jobs[0]["queued_at"].get<double>(), jobs[0]["finished_at"].get<double>());
  EXPECT_EQ(jobs[1]["subject"], "mount on scratch");

  r = ctl({"jobs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, first, second, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_FALSE(std::getline(lines, extra)) << r.out;
  EXPECT_EQ(header.rfind("JOB", 0), 0u) << header;
  for (const char* col : {"STATE", "KIND", "SUBJECT", "QUEUED", "TOOK", "RESULT"}) EXPECT_NE(header.find(col), std::string::npos) << col;
  EXPECT_EQ(first.rfind(std::to_string(id) + " ", 0), 0u) << first;
  EXPECT_NE(first.find("done"), std::string::npos) << first;
  EXPECT_NE(first.find("capacity on scratch"), std::string::npos) << first;
  EXPECT_NE(second.find("mount on scratch"), std::string::npos) << second;

  r = ctl({"job", std::to_string(id)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "job " + std::to_string(id) + " done: capacity on scratch: ok\n");
  r = ctl({"--json", "job", std::to_string(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["job"], id);
  EXPECT_EQ(j["state"], "done");
  EXPECT_EQ(j["subject"], "capacity on scratch");

  r = ctl({"job", "999999"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("no job 999999"), std::string::npos) << r.err;
  EXPECT_EQ(ctl({"job", "seven"}).exit_code, 2);
  // Reading jobs is for group adm too, as GetJob.
  r = ctl({"jobs"}, "adm");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ctl({"jobs"}, "nobody").exit_code, 4);
}

// Permission denied says who may do it and how, not the bus's policy text.
TEST_F(DBusApi, PermissionDeniedSaysWhoMayAndHow) {
  auto r = ctl({"status"}, "nobody");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find("reading fsauditd's state is for root and the members of group adm; you are nobody (uid 65534), not in group adm"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sudo fsauditctl status"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sudo usermod -aG adm nobody"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Rejected send message"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("usage:"), std::string::npos) << r.err;
  for (std::vector<std::string> change : {std::vector<std::string>{"reload"}, {"run", "capacity", "scratch"}, {"scrub", "start", "scratch"}}) {
    r = ctl(change, "adm");
    EXPECT_EQ(r.exit_code, 4) << change[0];
    std::string words = change[0] == "scrub" ? "scrub start" : change[0];
    EXPECT_NE(r.err.find("`fsauditctl " + words + "` changes what fsauditd does, which only root may do; you are nobody"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Run it as root: sudo fsauditctl " + words), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Rejected send message"), std::string::npos) << r.err;
  }
}

namespace {

// A subscriber to JobFinished in a child process with the given credentials; reports the job ids
// it received within `seconds`, one a line, on the returned pipe.
struct Listener {
  int pid = -1, fd = -1;
  Listener(const std::string& address, bool adm, int seconds) {
    int p[2];
    if (::pipe(p) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      gid_t groups[] = {4};
      if (::setgroups(adm ? 1 : 0, groups) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
        ::_exit(3);
      sd_bus* b = nullptr;
      if (sd_bus_new(&b) < 0 || sd_bus_set_address(b, address.c_str()) < 0 || sd_bus_set_bus_client(b, 1) < 0 || sd_bus_start(b) < 0)
        ::_exit(4);
      if (sd_bus_match_signal(b, nullptr, nullptr, fsaudit::dbus::kObjectPath, fsaudit::dbus::kInterface, "JobFinished", nullptr,
                              nullptr) < 0)
        ::_exit(5);
      [[maybe_unused]] auto n = ::write(p[1], "ready\n", 6);
      auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
      while (std::chrono::steady_clock::now() < end) {
        sd_bus_message* m = nullptr;
        while (sd_bus_process(b, &m) > 0) {
          std::uint64_t id = 0;
          if (m && sd_bus_message_is_signal(m, fsaudit::dbus::kInterface, "JobFinished") && sd_bus_message_read(m, "t", &id) > 0) {
            std::string line = std::to_string(id) + "\n";
            n = ::write(p[1], line.data(), line.size());
          }
          sd_bus_message_unref(m);
          m = nullptr;
        }
        sd_bus_wait(b, 100000);
      }
      ::_exit(0);
    }
    ::close(p[1]);
    fd = p[0];
  }
  std::string read_line(int timeout_ms) {
    std::string l;
    char c = 0;
    pollfd pf{fd, POLLIN, 0};
    while (::poll(&pf, 1, timeout_ms) > 0 && ::read(fd, &c, 1) == 1 && c != '\n') l += c;
    return l;
  }
  std::string rest() {  // after the child exits
    std::string out;
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
  int wait() {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

// Issue 29 item 6: JobFinished carries what GetJob returns, so it reaches GetJob's audience (root and
// group adm) and no one else, whatever match rule they add.
TEST_F(DBusApi, JobFinishedReachesOnlyWhoMayReadJobs) {
  Listener nobody(bus_->address(), false, 6), adm(bus_->address(), true, 6);
  ASSERT_EQ(nobody.read_line(5000), "ready");
  ASSERT_EQ(adm.read_line(5000), "ready");
  auto r = ctl({"run", "capacity", "scratch", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  unsigned long long id = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "job %llu done", &id), 1) << r.out;
  EXPECT_EQ(nobody.wait(), 0);
  EXPECT_EQ(adm.wait(), 0);
  EXPECT_EQ(adm.rest(), std::to_string(id) + "\n") << "group adm receives the signal";
  EXPECT_EQ(nobody.rest(), "") << "a user outside adm received JobFinished";
}

// fsauditctl's text from the real daemon: the tables and sentences say what the daemon's JSON says
// about the filesystem this test made, and what the kernel says about it (statvfs). Nothing here is
// a stored copy of fsaudit's output.
TEST_F(DBusApi, CtlStatusTableSaysWhatTheDaemonAndTheKernelSay) {
  json s = ctl_json({"status"});
  // The table and the JSON are two calls: take a pair between which the daemon's overall view did
  // not change (a probe's first run may land between them on a slow machine, e.g. under ASan).
  auto r = ctl({"status"});
  for (int i = 0; i < 20; ++i) {
    json again = ctl_json({"status"});
    if (again["overall"] == s["overall"] && again["targets"].size() == s["targets"].size() &&
        (again["targets"].empty() || again["targets"][0]["health"] == s["targets"][0]["health"]))
      break;
    s = again;
    r = ctl({"status"});
  }
  ASSERT_EQ(s["schema"], "fsaudit.status/v1");
  ASSERT_EQ(s["targets"].size(), 1u) << s.dump(2);
  const json& t = s["targets"][0];
  EXPECT_EQ(t["name"], "scratch");
  struct statvfs v {};
  ASSERT_EQ(::statvfs((dir_ / "scratch").c_str(), &v), 0);
  double size = static_cast<double>(v.f_blocks) * static_cast<double>(v.f_frsize);
  ASSERT_TRUE(t["size_bytes"].is_number()) << t.dump(2);
  EXPECT_DOUBLE_EQ(t["size_bytes"].get<double>(), size);

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
  // The text comes from a second call, and the disk is shared with whatever else runs here: the
  // used share may have moved by a point in between.
  ASSERT_EQ(row[3].back(), '%') << row[3];
  EXPECT_NEAR(std::stod(row[3]), t["used_ratio"].get<double>() * 100, 1.5) << ls[3];
  // Columns line up: each header starts where its column's cells start.
  EXPECT_EQ(ls[2].find("HEALTH"), ls[3].find(row[2], row[0].size() + row[1].size()));

  // Colour only when asked, and never in --json.
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);
  auto coloured = ctl({"--color=always", "status"});
  EXPECT_NE(coloured.out.find("\x1b["), std::string::npos);
  EXPECT_EQ(lines_of(coloured.out).size(), ls.size());
  EXPECT_EQ(ctl({"--color=always", "--json", "status"}).out.find("\x1b["), std::string::npos);

  json targets = ctl_json({"targets"});
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0]["name"], t["name"]);
  EXPECT_EQ(targets[0]["fs"], t["fs"]);
  r = ctl({"targets"});
  ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), 2u) << r.out;
  EXPECT_EQ(words(ls[0]), (std::vector<std::string>{"TARGET", "FS", "DEVICE", "HEALTH", "PROBLEMS"}));
  EXPECT_EQ(words(ls[1])[0], "scratch");
}

// The daemon reported read-write without a mount state, which printed a stray ", read-write." line.
TEST_F(DBusApi, CtlExplainSaysWhatTheDaemonKnowsInSentences) {
  json t = ctl_json({"explain", "scratch"});
  // The mount probe's first run may come after the capacity probe's: wait for what it reports.
  for (int i = 0; i < 100 && !t["readonly"].is_boolean(); ++i) {
    DaemonProcess::sleep_ms(100);
    t = ctl_json({"explain", "scratch"});
  }
  // The sentences and the JSON are two calls: take a pair between which the daemon's view of the
  // target did not change (a probe's run may land between them on a busy machine).
  auto r = ctl({"explain", "scratch"});
  for (int i = 0; i < 20; ++i) {
    json again = ctl_json({"explain", "scratch"});
    if (again["health"] == t["health"] && again["readonly"] == t["readonly"] && again["size_bytes"] == t["size_bytes"]) break;
    t = again;
    r = ctl({"explain", "scratch"});
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ls = lines_of(r.out);
  ASSERT_GE(ls.size(), 4u) << r.out;
  std::string fs = t["fs"].get<std::string>();
  EXPECT_EQ(ls[0].rfind("scratch is a" + std::string(std::string("aeiox").find(fs[0]) != std::string::npos ? "n " : " ") + fs + " filesystem", 0), 0u) << ls[0];
  for (const auto& l : ls) {
    ASSERT_FALSE(l.empty()) << r.out;
    EXPECT_NE(l[0], ',') << "a fragment: " << l;
  }
  if (t["readonly"].is_boolean()) {
    EXPECT_NE(r.out.find(t["readonly"].get<bool>() ? "read-only." : "read-write."), std::string::npos) << r.out;
  }
  // The free-space sentence carries the daemon's numbers (the free part may move between the two
  // calls on a disk shared with whatever else runs here; the size does not).
  EXPECT_NE(r.out.find(" of " + fsaudit::format_bytes(t["size_bytes"].get<double>()) + " are free ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(t["health"] == "ok" ? "Its health is ok" : "Its health is " + t["health"].get<std::string>() + " because:"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No canary tests"), std::string::npos) << "no canary is configured here: " << r.out;
}

TEST_F(DBusApi, CtlProbesTableListsTheSchedule) {
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

// Usage errors are exit 2 before anything is asked of the bus: no daemon, no bus needed.
TEST(DBusCtl, UsageErrorsAreUsageErrorsWithoutABus) {
  TempDir dir;
  std::string nowhere = "unix:path=" + (dir / "no-such-socket").string();
  for (std::vector<std::string> args : {std::vector<std::string>{"frobnicate"}, {"jobs", "extra"}, {"job"}, {"job", "seven"},
                                        {"status", "--wait"}, {"--bogus", "status"}, {"scrub", "explode", "x"}, {"canary", "frob", "x"},
                                        {"canary", "run"}, {"run"}, {"reload", "now"}, {}}) {
    std::vector<std::string> argv = {ctl_binary(), "--bus", nowhere};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << (args.empty() ? "(none)" : args[0]) << ": " << r.err;
    EXPECT_NE(r.err.find("usage: fsauditctl"), std::string::npos) << r.err;
  }
  EXPECT_EQ(run({ctl_binary(), "status", "--bus"}).exit_code, 2);
  for (std::vector<std::string> args : {std::vector<std::string>{"jobs"}, {"job", "7"}, {"reload"}}) {
    std::vector<std::string> argv = {ctl_binary(), "--bus", nowhere};
    argv.insert(argv.end(), args.begin(), args.end());
    EXPECT_EQ(run(argv).exit_code, 3) << args[0];
  }
}
