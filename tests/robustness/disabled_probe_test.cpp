// Issue 32 class 6: a feature switched off reports nothing that fires FsauditProbeFailing, whatever
// the host cannot give it (here: no mount table at all).
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "probes/latency/probe.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

TEST(DisabledProbe, LatencyOffNeverFailsWithoutAMountTable) {
  auto cfg = config::parse_config("latency:\n  enabled: false\n", "test.yaml");
  ASSERT_FALSE(cfg.latency.enabled);
  testing::TempDir host("disabled-latency");  // no proc/self/mountinfo: the mount table is unreadable
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(host.path()), runner);
  auto probes = latency::make_latency_probes(cfg);
  ASSERT_FALSE(probes.empty());
  for (auto& p : probes) {
    auto r = p->run(Target::host(), c.ctx);
    EXPECT_NE(r.outcome, Outcome::failed) << p->name() << ": " << r.reason;
    EXPECT_NE(r.reason.find("disabled"), std::string::npos) << r.reason;
    EXPECT_TRUE(r.metrics.empty()) << p->name();
  }
}

// A probe file the disabled sampler left in a configured path is still removed without a mount table.
TEST(DisabledProbe, LatencyOffRemovesProbeFilesInConfiguredPathsWithoutAMountTable) {
  testing::TempDir host("disabled-latency-host");
  testing::TempDir data("disabled-latency-data");
  std::filesystem::create_directories(data / ".fsaudit");
  testing::write_text(latency::ProbeFile::path_in((data / ".fsaudit").string()), "x");
  latency::LatencyCleanupProbe cleanup(".fsaudit", TargetSelection{}, {data.path().string()});
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(host.path()), runner);
  auto r = cleanup.run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::not_applicable) << r.reason;
  EXPECT_NE(r.reason.find("removed"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("mount table"), std::string::npos) << r.reason;
  EXPECT_FALSE(std::filesystem::exists(latency::ProbeFile::path_in((data / ".fsaudit").string())));
}

}  // namespace
}  // namespace fsaudit
