// fsauditctl's text and JSON output against golden files, from a fixed scrape and a fixed clock.
// Regenerate after an intended change with FSAUDIT_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "ctl/render.hpp"
#include "daemon/core/files.hpp"
#include "daemon/http/exposition.hpp"
#include "daemon/http/status.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;
using nlohmann::json;

namespace {

constexpr double kNow = 1700001000;

json status_json() {
  auto text = read_file(std::string(FSAUDIT_SOURCE_DIR) + "/tests/http/data/status_metrics.prom");
  EXPECT_TRUE(text);
  auto e = http::parse_exposition(*text);
  EXPECT_TRUE(e);
  return http::to_json(http::build_status(*e, kNow));
}

void golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(FSAUDIT_SOURCE_DIR) + "/tests/ctl/golden/" + name;
  if (std::getenv("FSAUDIT_UPDATE_GOLDEN")) fsaudit::testing::write_text(path, actual);
  auto want = read_file(path);
  ASSERT_TRUE(want) << path << " is missing; run with FSAUDIT_UPDATE_GOLDEN=1";
  EXPECT_EQ(actual, *want) << "golden " << name << " differs";
}

}  // namespace

TEST(CtlGolden, Status) { golden("status.txt", ctl::render_status(status_json(), {}, kNow)); }
TEST(CtlGolden, StatusColour) {
  auto out = ctl::render_status(status_json(), {true}, kNow);
  EXPECT_NE(out.find("\x1b[1;31msilent\x1b[0m"), std::string::npos);
  EXPECT_NE(out.find("\x1b[1;31mcritical\x1b[0m"), std::string::npos);
  // Colour codes do not break the alignment: each table row is as wide as without colour.
  auto plain = ctl::render_status(status_json(), {}, kNow);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(plain.begin(), plain.end(), '\n'));
}
TEST(CtlGolden, Targets) { golden("targets.txt", ctl::render_targets(status_json(), {})); }
TEST(CtlGolden, Canaries) { golden("canary_list.txt", ctl::render_canaries(status_json(), {}, kNow)); }
// `canary status NAME` for every canary of the fixture, as text and as `--json` prints it.
TEST(CtlGolden, CanaryStatusEveryVerdictTextAndJson) {
  auto s = status_json();
  ASSERT_EQ(s["canaries"].size(), 2u);
  for (const auto& c : s["canaries"]) {
    std::string name = c["name"].get<std::string>();
    golden("canary_status_" + name + ".txt", ctl::render_canary(c, {}, kNow));
    golden("canary_status_" + name + ".json", c.dump(2) + "\n");
  }
}
// What `canary run` / `run` print for a job: queued without --wait, finished with it.
TEST(CtlGolden, Jobs) {
  json done = {{"job", 7}, {"kind", "probe"}, {"subject", "canary:btrfs-raid1 on host"}, {"state", "done"}, {"result", "verdict repaired"}};
  json failed = {{"job", 8}, {"kind", "probe"}, {"subject", "canary:xfs-canary on host"}, {"state", "failed"},
                 {"result", "failed: canary xfs-canary: refused: no signature"}};
  json queued = {{"job", 9}, {"kind", "canary_init"}, {"subject", "xfs-canary"}, {"state", "queued"}, {"result", ""}};
  golden("jobs.txt", ctl::render_job(done, true) + ctl::render_job(failed, true) + ctl::render_job(queued, false));
  golden("job.json", done.dump(2) + "\n");
}
TEST(CtlGolden, Scrubs) { golden("scrub_list.txt", ctl::render_scrubs(status_json(), {})); }
TEST(CtlGolden, Probes) {
  json p = json::parse(R"([{"name":"capacity","scope":"per_target","interval_ms":30000,"timeout_ms":10000,"targets":["/srv","/data"]},
                            {"name":"canary:xfs-canary","scope":"host","interval_ms":21600000,"timeout_ms":1800000,"targets":["host"]}])");
  golden("probes.txt", ctl::render_probes(p, {}));
}
TEST(CtlGolden, Explain) {
  auto s = status_json();
  for (const auto& t : s["targets"]) {
    json j = t;
    j["canary_details"] = json::array();
    for (const auto& c : s["canaries"])
      for (const auto& n : t["canaries"])
        if (c["name"] == n) j["canary_details"].push_back(c);
    std::string name = t["name"].get<std::string>().substr(1);
    golden("explain_" + name + ".txt", ctl::render_explain(j, kNow));
  }
}
TEST(CtlGolden, StatusJson) { golden("status.json", status_json().dump(2) + "\n"); }
