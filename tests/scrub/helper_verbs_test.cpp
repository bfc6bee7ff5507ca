// The privileged helper's scrub verbs through the helper's one dispatch (handle_helper_request):
// a target that the helper's own config does not scrub, or any extra key, is refused before a
// scrub command runs; a target it scrubs is carried out by the filesystem's driver.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/config/config.hpp"
#include "probes/canary/helper_protocol.hpp"
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

}  // namespace
}  // namespace fsaudit::scrub
