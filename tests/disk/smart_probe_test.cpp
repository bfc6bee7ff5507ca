// The SMART probe and fsaudit-helper's smart-read verb: hostile requests are refused and run
// nothing; a fake smartctl for standby, each exit bit, garbage and a hang; the real smartctl on a
// loop device says "unsupported", once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/config/config.hpp"
#include "probes/disk/probe.hpp"
#include "probes/disk/smart_verb.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::disk {
namespace {

namespace fs = std::filesystem;
using testing::FakeRunner;

HostPaths tree() { return HostPaths::under(testing::fixtures_dir() / "disk" / "tree"); }

config::Config helper_config(const HostPaths& h, const std::string& extra = "") {
  auto c = config::parse_config("host: {sysfs: " + h.sysfs.string() + "}\n" + extra, "helper.yaml");
  return c;
}

std::string refusal(const std::optional<std::string>& out) {
  if (!out) return "(not handled)";
  auto j = nlohmann::json::parse(*out);
  return j.value("ok", true) ? "" : j.value("refused", std::string("?"));
}

TEST(SmartVerb, RefusesPathsOptionsPartitionsLayersAndUnknownDisks) {
  FakeRunner runner;
  auto own = helper_config(tree());
  for (const char* req : {R"({"verb":"smart-read","disk":"/dev/sda"})", R"({"verb":"smart-read","disk":"-a"})",
                          R"({"verb":"smart-read","disk":"--scan"})", R"({"verb":"smart-read","disk":"../sda"})",
                          R"({"verb":"smart-read","disk":"sda1"})", R"({"verb":"smart-read","disk":"md0"})",
                          R"({"verb":"smart-read","disk":"dm-0"})", R"({"verb":"smart-read","disk":"sdz"})",
                          R"({"verb":"smart-read","disk":"sda -d sat"})", R"({"verb":"smart-read","disk":""})",
                          R"({"verb":"smart-read","disk":5})", R"({"verb":"smart-read"})",
                          R"({"verb":"smart-read","disk":"sda","device":"/dev/sdb"})"}) {
    auto out = handle_smart_helper_request(req, own, runner);
    EXPECT_NE(refusal(out), "") << req;
    EXPECT_NE(refusal(out), "(not handled)") << req;
  }
  EXPECT_TRUE(runner.calls.empty()) << runner.calls.front();
  EXPECT_FALSE(handle_smart_helper_request(R"({"verb":"canary-run","canary":"x"})", own, runner));
}

TEST(SmartVerb, RunsTheOneFixedCommandForAWholeDisk) {
  FakeRunner runner;
  runner.answer("smartctl --json -a -n standby /dev/sda", "{\"smartctl\":{\"exit_status\":0}}", 0);
  auto out = handle_smart_helper_request(R"({"verb":"smart-read","disk":"sda"})", helper_config(tree()), runner);
  ASSERT_EQ(refusal(out), "");
  auto j = nlohmann::json::parse(*out);
  EXPECT_EQ(j["result"]["disk"], "sda");
  EXPECT_EQ(j["result"]["exit"], 0);
  EXPECT_EQ(runner.calls, std::vector<std::string>{"smartctl --json -a -n standby /dev/sda"});
}

// A smartctl that never answers is killed at the helper's timeout and the read refused with why.
TEST(SmartVerb, AHungSmartctlIsKilledAndReported) {
  testing::TempDir d("smart-hang");
  ::chmod(d.path().c_str(), 0755);
  auto fake = d / "smartctl";
  testing::write_text(fake, "#!/bin/sh\nsleep 60\n");
  ::chmod(fake.c_str(), 0755);
  ProcessRunner runner;
  auto own = helper_config(tree(), "tools: {smartctl: " + fake.string() + "}\nprobes: {smart: {timeout: 1s}}\n");
  auto t0 = std::chrono::steady_clock::now();
  auto out = handle_smart_helper_request(R"({"verb":"smart-read","disk":"sdb"})", own, runner);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_NE(refusal(out).find("killed after 1000 ms"), std::string::npos) << refusal(out);
  EXPECT_LT(took, std::chrono::seconds(10));
}

// The probe on the fixture host, with a fake smartctl answering per disk.
struct ProbeRun {
  FakeRunner runner;
  std::unique_ptr<Probe> probe = make_smart_probe(config::Config{});
  ProbeResult run() {
    testing::ContextHolder c(tree(), runner);
    return probe->run(Target::host(), c.ctx);
  }
};

std::string sample(const std::string& f) { return testing::fixture("smart/" + f); }

// The fixture host's /tank dataset: a pool on a file vdev, so no disk of its own here.
const char* const kTankOnAFile =
    "  pool: tank\n state: ONLINE\nconfig:\n\n\tNAME              STATE     READ WRITE CKSUM\n"
    "\ttank              ONLINE       0     0     0\n\t  /srv/tank.img    ONLINE       0     0     0\n\n"
    "errors: No known data errors\n";

void answer_all(FakeRunner& r, const std::string& json, int code) {
  for (const char* d : {"sda", "sdb", "sdc", "nvme0n1", "loop0"})
    r.answer(std::string("smartctl --json -a -n standby /dev/") + d, json, code);
  r.answer("zpool status tank", kTankOnAFile);
}

TEST(SmartProbe, StandbyIsCountedNotAFailure) {
  ProbeRun p;
  answer_all(p.runner, sample("smartctl-7.3-nvme-healthy-toshiba-kxg6-xall.json"), 0);
  p.runner.answer("smartctl --json -a -n standby /dev/sdb", sample("smartctl-7.5-ata-standby-nocheck-exit-2.json"), 2);
  auto r = p.run();
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_state", {{"disk", "sdb"}, {"state", "standby"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_skipped_standby_total", {{"disk", "sdb"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_skipped_standby_total", {{"disk", "sda"}}), 0);
  EXPECT_DOUBLE_EQ(r.metrics.value("fsaudit_disk_nvme_percentage_used_ratio", {{"disk", "sda"}}), 0.03);
  r = p.run();
  EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_skipped_standby_total", {{"disk", "sdb"}}), 2);
}

TEST(SmartProbe, CommandFailureBitsAreAProbeFailureWithTheDecodedReason) {
  const char* reasons[] = {"bit 0", "bit 1", "bit 2"};
  for (int bit = 0; bit < 3; ++bit) {
    ProbeRun p;
    answer_all(p.runner, sample("smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json"), 0);
    p.runner.answer("smartctl --json -a -n standby /dev/sda",
                    "{\"smartctl\":{\"exit_status\":" + std::to_string(1 << bit) + "},\"smart_status\":{\"passed\":true}}",
                    1 << bit);
    auto r = p.run();
    EXPECT_EQ(r.outcome, Outcome::failed) << bit;
    EXPECT_NE(r.reason.find(std::string("sda: smartctl exit status ") + std::to_string(1 << bit)), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find(reasons[bit]), std::string::npos) << r.reason;
    EXPECT_EQ(r.reason.find("sdb"), std::string::npos) << r.reason;
  }
}

TEST(SmartProbe, DiskFindingBitsAreExportedNotAFailure) {
  for (int bit = 3; bit < 8; ++bit) {
    ProbeRun p;
    answer_all(p.runner, "{\"smartctl\":{\"exit_status\":" + std::to_string(1 << bit) + "},\"smart_status\":{\"passed\":" +
                             (bit == 3 ? "false" : "true") + "}}", 1 << bit);
    auto r = p.run();
    EXPECT_EQ(r.outcome, Outcome::ok) << bit << ": " << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_finding", {{"disk", "sda"}, {"finding", kSmartFindings[bit - 3]}}), 1);
  }
  ProbeRun p;
  answer_all(p.runner, sample("smartctl-7.1-ata-hdd-usbjmicron-failed-reallocated-1975-now-pending-8.json"), 216);
  auto r = p.run();
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_passed", {{"disk", "sdc"}}), 0);
  EXPECT_EQ(r.metrics.value("fsaudit_disk_at_risk", {{"disk", "sdc"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_disk_ata_reallocated_sectors", {{"disk", "sdc"}}), 1975);
  // Every disk answered "failing": /data sits on nvme0n1 (crypt) and sdc.
  EXPECT_EQ(r.metrics.value("fsaudit_members_at_risk", {{"target", "/data"}}), 2);
  EXPECT_EQ(r.metrics.value("fsaudit_members_at_risk", {{"target", "/"}}), 2);  // LVM over md0 over sda1 + sdb1
}

TEST(SmartProbe, MembersAtRiskCountsOnlyRiskyDisksOfTheTarget) {
  ProbeRun p;
  answer_all(p.runner, sample("smartctl-7.3-nvme-healthy-toshiba-kxg6-xall.json"), 0);
  p.runner.answer("smartctl --json -a -n standby /dev/sdc",
                  sample("smartctl-7.3-ata-hdd-usbjmicron-failed-reallocated-535-now-pending-1-uncorrect-84.json"), 216);
  auto r = p.run();
  EXPECT_EQ(r.metrics.value("fsaudit_members_at_risk", {{"target", "/data"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_members_at_risk", {{"target", "/boot"}}), 1);
  // None at risk under /: no series (issue 33's budget), while its disk's own gauge says 0.
  EXPECT_FALSE(r.metrics.has("fsaudit_members_at_risk", {{"target", "/"}}));
  EXPECT_EQ(r.metrics.value("fsaudit_disk_at_risk", {{"disk", "sda"}}), 0);
}

TEST(SmartProbe, GarbageAndCutOutputFailWithWhy) {
  ProbeRun p;
  answer_all(p.runner, sample("smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json"), 0);
  p.runner.answer("smartctl --json -a -n standby /dev/sda", "\x01\x02 not json", 0);
  auto cut = sample("smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json");
  p.runner.answer("smartctl --json -a -n standby /dev/sdb", cut.substr(0, cut.size() / 2), 0);
  auto r = p.run();
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("sda: smartctl output is not JSON"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("sdb: smartctl output is not JSON"), std::string::npos) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_passed", {{"disk", "nvme0n1"}}), 1);  // the others still count
}

// smart.concurrency bounds the smartctl calls in flight; smart.call_timeout bounds each call.
TEST(SmartProbe, ConcurrencyAndCallTimeoutComeFromTheSmartSection) {
  for (int want : {1, 3}) {
    FakeRunner runner;
    std::mutex mu;
    int now = 0, peak = 0;
    std::vector<std::chrono::milliseconds> timeouts;
    auto healthy = sample("smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json");
    runner.answer("zpool status tank", kTankOnAFile);
    runner.handler = [&](const std::vector<std::string>&) {
      {
        std::lock_guard l(mu);
        peak = std::max(peak, ++now);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::lock_guard l(mu);
      --now;
      return FakeRunner::exited(0, healthy);
    };
    struct Spy final : CommandRunner {
      FakeRunner& inner;
      std::mutex& mu;
      std::vector<std::chrono::milliseconds>& t;
      Spy(FakeRunner& i, std::mutex& m, std::vector<std::chrono::milliseconds>& v) : inner(i), mu(m), t(v) {}
      CommandResult run(const CommandSpec& s, std::stop_token st = {}) override {
        if (!s.argv.empty() && s.argv[0] == "smartctl") {
          std::lock_guard l(mu);
          t.push_back(s.timeout);
        }
        return inner.run(s, st);
      }
    } spy(runner, mu, timeouts);
    auto cfg = config::parse_config("smart: {concurrency: " + std::to_string(want) + ", call_timeout: 7s}\n", "t.yaml");
    auto probe = make_smart_probe(cfg);
    testing::ContextHolder c(tree(), spy);
    auto r = probe->run(Target::host(), c.ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(peak, want);
    ASSERT_EQ(timeouts.size(), 5u);
    for (auto t : timeouts) EXPECT_EQ(t, std::chrono::seconds(7));
  }
}

TEST(SmartConfigSection, KeysDefaultsAndErrors) {
  auto d = config::parse_config("", "t.yaml");
  EXPECT_EQ(d.smart.concurrency, 2);
  EXPECT_EQ(d.smart.call_timeout, std::chrono::seconds(60));
  auto error_of = [](const std::string& yaml) {
    try {
      config::parse_config(yaml, "fsaudit.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("smart: {concurrency: 0}\n").find("smart.concurrency"), std::string::npos);
  EXPECT_NE(error_of("smart: {concurrency: 17}\n").find("fsaudit.yaml:1"), std::string::npos);
  EXPECT_NE(error_of("smart: {call_timeout: 0s}\n").find("smart.call_timeout"), std::string::npos);
  EXPECT_NE(error_of("smart: {timeout: 5s}\n").find("smart.timeout"), std::string::npos);  // unknown key named
}

TEST(SmartProbe, ADiskWithoutSmartIsAskedOnceAndReportedAsUnsupported) {
  ProbeRun p;
  answer_all(p.runner, sample("smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json"), 0);
  p.runner.answer("smartctl --json -a -n standby /dev/loop0", sample("smartctl-7.3-loop-device-unable-to-detect-exit-1.json"), 1);
  for (int i = 0; i < 3; ++i) {
    auto r = p.run();
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_disk_smart_state", {{"disk", "loop0"}, {"state", "unsupported"}}), 1);
    EXPECT_FALSE(r.metrics.has("fsaudit_disk_smart_finding", {{"disk", "loop0"}}));
  }
  EXPECT_EQ(p.runner.count("smartctl --json -a -n standby /dev/loop0"), 1);
  EXPECT_EQ(p.runner.count("smartctl --json -a -n standby /dev/sda"), 3);
}

}  // namespace
}  // namespace fsaudit::disk
