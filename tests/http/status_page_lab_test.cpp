// The status page as a person sees it, on the real daemon: a lab daemon with an XFS canary (verdict
// silent) and a btrfs raid1 canary (repaired), rendered by headless Chromium (the DOM Chromium built
// and the screenshot's pixels: a silent verdict is red; the screenshot stays in the build directory);
// and a daemon on loop-device filesystems whose page must show fsync p99, the kernel's errors after
// a real corrupted read, no forecast the alert would not make, and "not mounted" after an unmount,
// at 1280 and 400 px without a horizontal scroll bar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "daemon/core/strings.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/fs_lab.hpp"
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

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// GET /api/v1/status of the daemon, parsed; null when it cannot be read.
nlohmann::json status_json(int port) {
  auto r = run({"curl", "-sS", "--max-time", "10", "http://127.0.0.1:" + std::to_string(port) + "/api/v1/status"}, 20);
  if (!r.ok()) return nullptr;
  return nlohmann::json::parse(r.out, nullptr, false);
}

const nlohmann::json* target_of(const nlohmann::json& st, const std::string& name) {
  if (!st.is_object()) return nullptr;
  for (const auto& t : st["targets"])
    if (t["name"] == name) return &t;
  return nullptr;
}

// Polls the status JSON until `pred(target)` holds for the target `name`; returns the last document.
template <class Pred>
nlohmann::json wait_status(int port, const std::string& name, Pred pred, int timeout_s) {
  nlohmann::json st;
  for (int i = 0; i < timeout_s * 2; ++i) {
    st = status_json(port);
    if (const auto* t = target_of(st, name); t && pred(*t)) return st;
    DaemonProcess::sleep_ms(500);
  }
  return st;
}

// The page rendered by headless Chromium at `width` px: {inner_width, scroll_width, text}.
nlohmann::json rendered(int port, int width) {
  auto r = run({"python3", std::string(FSAUDIT_SOURCE_DIR) + "/tests/http/page_layout.py",
                "http://127.0.0.1:" + std::to_string(port) + "/", std::to_string(width)},
               150);
  EXPECT_TRUE(r.ok()) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out << r.err;
  return j.is_object() ? j : nlohmann::json{{"inner_width", 0}, {"scroll_width", 1}, {"text", ""}};
}

bool chromium_or_skip_reason(std::string* why) {
  if (run({"sh", "-c", "command -v chromium"}).exit_code == 0) return true;
  *why = "chromium is not installed (scripts/install-deps.sh installs it)";
  return false;
}

}  // namespace

TEST(StatusPage, LabDaemonShowsFsyncKernelErrorsMountStateAndNoEarlyForecast) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  if (std::string why; !chromium_or_skip_reason(&why)) {
    if (lab_required()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  TempDir dir("status-lab");
  LoopDevice e(dir.path(), "ext4.img", 64 << 20), b(dir.path(), "btrfs.img", 128 << 20);
  ASSERT_TRUE(e.ok() && b.ok());
  must({"mkfs.ext4", "-q", "-F", e.device()});
  must({"mkfs.btrfs", "-q", "-f", "-d", "single", "-m", "dup", b.device()});
  ScrubStatusFileCleanup cleanup(b.device());
  const auto ext4 = dir / "ext4", btrfs = dir / "btrfs";
  std::optional<Mount> me(std::in_place, e.device(), ext4, "ext4");
  ASSERT_TRUE(me->ok()) << me->error();
  // A file on btrfs with one copy, one of its blocks corrupted on the raw device: reading it fails
  // with EIO and the kernel logs the checksum error.
  const std::string marker = "FSAUDIT-STATUS-LAB-" + std::to_string(::getpid()) + "-BLOCK";
  {
    Mount mb(b.device(), btrfs, "btrfs");
    ASSERT_TRUE(mb.ok()) << mb.error();
    std::string data;
    for (int i = 0; i < 4; ++i) data += pattern_block(marker + std::to_string(i));
    std::ofstream(btrfs / "data.bin", std::ios::binary) << data;
    must({"sync", "-f", (btrfs / "data.bin").string()});
  }
  auto offs = find_offsets(b.device(), marker + "1-0;");
  ASSERT_EQ(offs.size(), 1u);
  ASSERT_TRUE(overwrite(b.device(), offs[0], std::string(4096, 'X')));
  Mount mb(b.device(), btrfs, "btrfs");
  ASSERT_TRUE(mb.ok()) << mb.error();

  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                     "\ndbus_address: none\ntargets:\n  discover: false\n  explicit: [{path: " + ext4.string() +
                     "}, {path: " + btrfs.string() +
                     "}]\nprobes:\n  mount: {interval: 1s, jitter: 0s}\n  capacity: {interval: 1s, jitter: 0s}\n"
                     "  btrfs: {interval: 1s, jitter: 0s, timeout: 10s}\n  kernel_log: {interval: 1s, jitter: 0s}\n"
                     "kernel_log:\n  source: kmsg\nscrub: {enabled: false}\n"
                     "latency:\n  samples_per_run: 2\n  budget: {stack_writes_per_second: 4}\n";
  DaemonProcess d(dir.path(), yaml, port);
  const std::string host = host_name();

  // fsync p99: a number once the sampler has samples, on the page as in the JSON.
  auto st = wait_status(port, ext4.string(), [](const auto& t) { return t["fsync_seconds"]["p99"].is_number(); }, 120);
  const auto* t = target_of(st, ext4.string());
  ASSERT_NE(t, nullptr) << st.dump(1) << d.log();
  ASSERT_TRUE((*t)["fsync_seconds"]["p99"].is_number()) << t->dump(1);
  EXPECT_EQ(st["host"], host);
  EXPECT_EQ((*t)["mounted"], true);
  EXPECT_EQ((*t)["protection"], "exposed") << t->dump(1);  // ext4 has no data checksums
  EXPECT_TRUE((*t)["inodes"]["free"].is_number()) << t->dump(1);

  // Fill most of the ext4 in seconds: a steep trend over minutes, with a quarter still free. The
  // alert (FsauditFilesystemFullIn7Days) waits for an hour of history and a fill level: so does the page.
  must({"dd", "if=/dev/zero", "of=" + (ext4 / "fill.bin").string(), "bs=1M", "count=36", "conv=fsync", "status=none"});
  st = wait_status(port, ext4.string(), [](const auto& t) { return t["used_ratio"].is_number() && t["used_ratio"] > 0.5; }, 30);
  t = target_of(st, ext4.string());
  ASSERT_NE(t, nullptr);
  ASSERT_GT((*t)["used_ratio"].get<double>(), 0.5) << t->dump(1);
  EXPECT_TRUE((*t)["days_to_full"].is_null()) << t->dump(1);
  for (const auto& p : (*t)["problems"]) EXPECT_EQ(p.get<std::string>().find("full in"), std::string::npos) << p;

  // A real corrupted read: the kernel's checksum error reaches the page for that device and filesystem.
  d.wait_for_metric("fsaudit_kernel_log_source_info", {}, 90);
  DaemonProcess::sleep_ms(1500);
  for (int i = 0; i < 4; ++i)
    run({"dd", "if=" + (btrfs / "data.bin").string(), "of=/dev/null", "bs=64k", "iflag=direct", "status=none"});
  const std::string dev = kname(b.device());
  auto has_kernel_error = [&](const nlohmann::json& t) {
    for (const auto& k : t["kernel_errors"])
      if (k["device"] == dev && k["last_hour"].get<double>() >= 1) return true;
    return false;
  };
  st = wait_status(port, btrfs.string(), has_kernel_error, 90);
  t = target_of(st, btrfs.string());
  ASSERT_NE(t, nullptr) << st.dump(1);
  EXPECT_TRUE(has_kernel_error(*t)) << t->dump(1) << d.log();
  EXPECT_EQ((*t)["protection"], "broken") << t->dump(1);  // errors in the last hour, no copy to repair from
  ASSERT_TRUE(st["first"].is_object()) << st.dump(1);
  EXPECT_EQ(st["first"]["severity"], "critical");
  EXPECT_NE(st["first"]["runbook_url"].get<std::string>().find("docs/runbooks.md#fsaudit"), std::string::npos);

  // What a person reads, wide and narrow: the host, the verdicts, the kernel error, fsync p99 as a
  // number, and nothing wider than a 400 px phone.
  for (int width : {1280, 400}) {
    auto page = rendered(port, width);
    const std::string text = page["text"];
    EXPECT_EQ(page["inner_width"], width);
    EXPECT_LE(page["scroll_width"].get<int>(), width) << "horizontal scroll at " << width << " px";
    EXPECT_NE(text.find("fsaudit on " + host), std::string::npos) << text;
    EXPECT_NE(text.find("2 filesystem(s): 0 protected, 1 exposed, 1 broken."), std::string::npos) << text;
    EXPECT_NE(text.find("What to do first:"), std::string::npos) << text;
    EXPECT_NE(text.find(dev + ": "), std::string::npos) << text;  // the kernel errors of the device, per filesystem
    EXPECT_NE(text.find("in the last hour"), std::string::npos) << text;
    EXPECT_NE(text.find("no data checksums"), std::string::npos) << text;
  }

  // Unmounted: the page says so, as the first thing to do.
  me->unmount();
  st = wait_status(port, ext4.string(), [](const auto& t) { return t["mounted"] == false; }, 30);
  t = target_of(st, ext4.string());
  ASSERT_NE(t, nullptr) << st.dump(1);
  EXPECT_EQ((*t)["mounted"], false) << t->dump(1) << d.log();
  EXPECT_EQ((*t)["health"], "critical");
  ASSERT_FALSE((*t)["problems"].empty());
  EXPECT_EQ((*t)["problems"][0].get<std::string>().rfind("not mounted", 0), 0u) << t->dump(1);
  auto page = rendered(port, 400);
  EXPECT_NE(page["text"].get<std::string>().find("not mounted"), std::string::npos) << page["text"];
  EXPECT_EQ(d.stop(60), 0) << d.log();
}

TEST(StatusPage, HeadlessChromiumShowsSilentInRed) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  if (run({"sh", "-c", "command -v chromium"}).exit_code != 0) {
    if (lab_required()) FAIL() << "chromium is not installed (scripts/install-deps.sh installs it)";
    GTEST_SKIP() << "chromium is not installed";
  }
  TempDir d("status-page");
  std::filesystem::create_directories(d / "data");
  // Production data on the stack a canary proves: a btrfs raid1 on two loop devices is "protected"
  // once the btrfs raid1 canary has come back repaired (and only then).
  LoopDevice v1(d.path(), "vault1.img", 256 << 20), v2(d.path(), "vault2.img", 256 << 20);
  ASSERT_TRUE(v1.ok() && v2.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", v1.device(), v2.device()});
  ScrubStatusFileCleanup cleanup(v1.device());
  Mount vault(v1.device(), d / "vault", "btrfs");
  ASSERT_TRUE(vault.ok()) << vault.error();
  int port = free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (d / "state").string() +
                     "\ndbus_address: none\ntargets: {discover: false, explicit: [{path: " + (d / "data").string() +
                     ", name: data}, {path: " + (d / "vault").string() + ", name: vault}]}\nlatency: {enabled: false}\n"
                     "probes:\n  setup: {interval: 2s, jitter: 0s}\n"
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

    // The vault: checksummed, redundant, its stack proven by the repaired canary: protected, in the
    // JSON and in what a person reads at 1280 and 400 px.
    auto st = wait_status(port, "vault", [](const auto& t) { return t["protection"] == "protected"; }, 60);
    const auto* vt = target_of(st, "vault");
    ASSERT_NE(vt, nullptr) << st.dump(1) << dp.log();
    EXPECT_EQ((*vt)["protection"], "protected") << vt->dump(1);
    EXPECT_NE((*vt)["protection_reason"].get<std::string>().find("lab-btrfs-raid1"), std::string::npos) << vt->dump(1);
    // Its redundancy, from the btrfs probe's stack model: raid1 on two present devices survives one more.
    EXPECT_EQ((*vt)["redundancy"]["margin"], 1) << vt->dump(1);
    EXPECT_EQ((*vt)["redundancy"]["designed"], 1) << vt->dump(1);
    EXPECT_TRUE((*vt)["redundancy"]["members_down"].empty()) << vt->dump(1);
    const auto* dt = target_of(st, "data");
    ASSERT_NE(dt, nullptr) << st.dump(1);
    EXPECT_NE((*dt)["protection"], "protected") << dt->dump(1);
    for (int width : {1280, 400}) {
      auto page = rendered(port, width);
      const std::string ptext = page["text"];
      EXPECT_NE(ptext.find("1 protected"), std::string::npos) << ptext;
      EXPECT_NE(ptext.find("proved lately that corruption on this kind of stack is caught"), std::string::npos) << ptext;
      EXPECT_NE(ptext.find("survives 1 more member failure"), std::string::npos) << ptext;
      EXPECT_LE(page["scroll_width"].get<int>(), width) << "horizontal scroll at " << width << " px";
    }

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
  EXPECT_NE(dom.find("<h1>fsaudit on <span id=\"host\">" + host_name() + "</span>:"), std::string::npos) << dom;
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
