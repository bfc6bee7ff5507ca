// The status page as a person sees it: a lab daemon with an XFS canary (verdict silent) and a btrfs
// raid1 canary (repaired), rendered by headless Chromium. Checks the DOM Chromium built and the
// screenshot's pixels (a silent verdict is red); the screenshot stays in the build directory.
#include <gtest/gtest.h>

#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;

namespace {

Cmd chromium(const TempDir& profile, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                   "--user-data-dir=" + profile.path().string(), "--window-size=1400,900"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run(argv, 120);
}

// A late cycle's phase (its in-flight marker) and the commands running now: what it waits for.
std::string in_flight(const std::filesystem::path& state) {
  return run({"sh", "-c", "find '" + state.string() + "' -name inflight.json -exec cat {} +; ps -eo pid,etimes,args | grep -E "
                          "'btrfs|xfs|mount|mkfs|losetup|fsaudit' | grep -v grep"})
      .out;
}

}  // namespace

TEST(StatusPage, HeadlessChromiumShowsSilentInRed) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  if (run({"sh", "-c", "command -v chromium"}).exit_code != 0) {
    if (lab_required()) FAIL() << "chromium is not installed (scripts/install-deps.sh installs it)";
    GTEST_SKIP() << "chromium is not installed";
  }
  TempDir d("status-page");
  std::filesystem::create_directories(d / "data");
  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ndbus_address: none\ntargets: {discover: false, explicit: [{path: " + (d / "data").string() +
                     ", name: data}]}\nlatency: {enabled: false}\n"
                     "canary:\n  lab: {enabled: true, interval: 1h, stacks: [xfs, btrfs-raid1]}\n";
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  std::string dom;
  {
    DaemonProcess dp(d.path(), yaml, port, {}, {{"FSAUDIT_LAB_ZFS_LOCK_HELD", "0"}});
    auto text = dp.wait_for(
        [](const std::string& t) {
          return scrape_value(t, "fsaudit_canary_last_verdict", {{"target", "lab-xfs"}, {"verdict", "silent"}}) == 1 &&
                 scrape_value(t, "fsaudit_canary_last_verdict", {{"target", "lab-btrfs-raid1"}, {"verdict", "repaired"}}) == 1;
        },
        300);
    // Both, with what the daemon said: a canary that is late or has another verdict shows its phase and reason.
    for (const auto& [target, verdict] : {std::pair{"lab-xfs", "silent"}, std::pair{"lab-btrfs-raid1", "repaired"}})
      ASSERT_EQ(scrape_value(text, "fsaudit_canary_last_verdict", {{"target", target}, {"verdict", verdict}}), 1)
          << target << "\n" << scrape_lines(text, "fsaudit_canary_last_verdict") << scrape_lines(text, "fsaudit_canary_scrub_ran")
          << scrape_lines(text, "fsaudit_probe_failure_info") << in_flight(d / "state") << dp.log();

    TempDir profile("chromium-profile");
    auto r = chromium(profile, {"--dump-dom", url});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    dom = r.out;
    std::string shot = std::string(FSAUDIT_BINARY_DIR) + "/status-page.png";
    std::filesystem::remove(shot);
    TempDir profile2("chromium-profile");
    r = chromium(profile2, {"--screenshot=" + shot, url});
    ASSERT_TRUE(std::filesystem::exists(shot)) << r.err;
    auto red = run({"python3", std::string(FSAUDIT_SOURCE_DIR) + "/tests/http/red_pixels.py", shot});
    ASSERT_TRUE(red.ok()) << red.err;
    // Bold "silent" in #d00000 is well over a hundred red pixels; nothing else on this page is red.
    EXPECT_GT(std::stoi(red.out), 100) << "screenshot " << shot;
    EXPECT_EQ(dp.stop(60), 0) << dp.log();
  }
  // What a person reads: the filesystem row, both canaries, the silent one with its story.
  EXPECT_NE(dom.find("<h1>fsaudit on this host:"), std::string::npos) << dom;
  EXPECT_NE(dom.find("data-target=\"data\""), std::string::npos);
  EXPECT_NE(dom.find("data-canary=\"lab-xfs\""), std::string::npos);
  auto row = dom.substr(dom.find("data-canary=\"lab-xfs\""));
  row = row.substr(0, row.find("</tr>"));
  EXPECT_NE(row.find("class=\"verdict v-silent\""), std::string::npos) << row;
  EXPECT_NE(row.find("cannot see bit rot"), std::string::npos) << row;
  EXPECT_NE(dom.find("class=\"verdict v-repaired\""), std::string::npos);
  EXPECT_NE(dom.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
}
