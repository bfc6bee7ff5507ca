// The one registration table (config::probe_types()) and the factories of fsauditd/ agree.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "daemon/config/config.hpp"
#include "fsauditd/probes.hpp"

namespace fsaudit {
namespace {

const char* kOneCanary = R"(
canary:
  canaries:
    - name: c1
      fs: btrfs
      layout: raid1
      mountpoint: /srv/canary-c1
      devices: [/dev/disk/by-id/a, /dev/disk/by-id/b]
)";

TEST(Registration, EveryProbeTypeBuildsItsProbes) {
  auto cfg = config::parse_config(kOneCanary, "test.yaml");
  auto probes = fsauditd::make_probes(cfg);
  std::set<std::string> built;
  for (const auto& p : probes) built.insert(p->name());
  for (const auto& type : config::probe_types()) {
    std::string name = type.name == "canary" ? "canary:c1" : type.name;  // one probe per canary
    EXPECT_TRUE(built.count(name)) << type.name << " is in config::probe_types() but fsauditd built no " << name;
  }
}

TEST(Registration, NamesAndSectionsAreUnique) {
  std::set<std::string> names, sections;
  for (const auto& type : config::probe_types()) {
    EXPECT_TRUE(names.insert(type.name).second) << "probe type " << type.name << " listed twice";
    EXPECT_EQ(type.section.empty(), type.parse_section == nullptr) << type.name << ": a section needs its parser";
    if (!type.section.empty()) {
      EXPECT_TRUE(sections.insert(type.section).second) << type.section << " owned twice";
    }
  }
}

TEST(Registration, ScheduledTypesAreConfigurableUnderProbes) {
  auto cfg = config::default_config();
  for (const auto& type : config::probe_types()) {
    if (!type.schedule) {
      EXPECT_EQ(cfg.probes.count(type.name), 0u) << type.name << " schedules itself";
      continue;
    }
    ASSERT_EQ(cfg.probes.count(type.name), 1u) << type.name;
    EXPECT_EQ(cfg.schedule(type.name).interval, type.schedule->interval) << type.name;
  }
}

}  // namespace
}  // namespace fsaudit
