// Lab: real btrfs on loop devices, real corruption of one copy on the raw device, and the btrfs
// probe (called directly, real host paths and commands) must attribute it to exactly that device.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "daemon/config/config.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/scrub/probe.hpp"
#include "daemon/core/strings.hpp"
#include "tests/support/fs_lab.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit::btrfs {
namespace {

namespace fs = std::filesystem;
using testing::Cmd;
using testing::must;
using testing::run;
using testing::ScrubStatusFileCleanup;

constexpr std::uint64_t kDevSize = 128ull << 20;  // >= 110 MiB each for raid1 with default mkfs options

using testing::kname;

metrics::Batch probe_now(const std::string& mnt, ProbeResult* full = nullptr) {
  auto t = testing::live_target(mnt);
  EXPECT_TRUE(t) << "no mount at " << mnt;
  if (!t) return {};
  testing::LiveContext c;
  // detail: full, for the bytes without redundancy below.
  auto probe = btrfs::make_btrfs_probe(config::parse_config("btrfs: {detail: full}\n", "test.yaml"));
  EXPECT_TRUE(probe->applies_to(*t));
  auto r = probe->run(*t, c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  if (full) *full = r;
  return r.metrics;
}

// The scrub's own counts come from the scrub probe (one family for every filesystem), watching only
// here: observe_only, so it never starts a scrub itself. `state` keeps what it saw between calls.
metrics::Batch scrub_now(const std::string& mnt, const fs::path& state) {
  auto cfg = config::parse_config("scrub:\n  filesystems: [btrfs]\n  observe_only: true\n", "lab.yaml");
  cfg.targets.include = {mnt};
  scrub::ScrubProbe probe(cfg.scrub, cfg.targets);
  fs::create_directories(state);
  testing::LiveContext c(state);
  auto r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  return r.metrics;
}

double corruption(const metrics::Batch& b, const std::string& dev) {
  return b.value("fsaudit_btrfs_device_errors", {{"device", kname(dev)}, {"kind", "corruption"}});
}

// Writes 4 pattern blocks (256 KiB) and returns the expected content.
std::string write_pattern_file(const fs::path& file, const std::string& marker) {
  std::string data;
  for (int i = 0; i < 4; ++i) data += testing::pattern_block(marker + std::to_string(i));
  std::ofstream(file, std::ios::binary) << data;
  must({"sync", "-f", file.string()});
  return data;
}

// Reads `file` with O_DIRECT (bypassing the page cache) in `times` separate processes: btrfs picks
// the raid1 mirror by reader pid, so several readers reach both copies.
std::vector<Cmd> direct_reads(const fs::path& file, const fs::path& out, int times) {
  std::vector<Cmd> r;
  for (int i = 0; i < times; ++i)
    r.push_back(run({"dd", "if=" + file.string(), "of=" + out.string(), "bs=64k", "iflag=direct", "status=none"}));
  return r;
}

std::string slurp(const fs::path& p) {
  auto r = read_file(p, 64 << 20);
  return r ? *r : std::string();
}

TEST(BtrfsLab, Raid1CorruptOneCopyCounterRisesOnlyForThatDevice) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-btrfs-lab");
  testing::LoopDevice a(dir.path(), "a.img", kDevSize), b(dir.path(), "b.img", kDevSize);
  ASSERT_TRUE(a.ok() && b.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", a.device(), b.device()});
  ScrubStatusFileCleanup cleanup(a.device());
  auto mnt = dir / "mnt";
  std::optional<testing::Mount> m(std::in_place, a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();

  auto before = probe_now(mnt.string());
  EXPECT_EQ(corruption(before, a.device()), 0);
  EXPECT_EQ(corruption(before, b.device()), 0);
  EXPECT_EQ(before.value("fsaudit_filesystem_data_redundancy", {{"target", mnt.string()}, {"fs", "btrfs"}}), 1);
  auto scrub_before = scrub_now(mnt.string(), dir / "scrub-state");
  // Read (no fsaudit_scrub_observe_success 0), supported and never completed: +Inf.
  EXPECT_FALSE(scrub_before.has("fsaudit_scrub_observe_success", {{"target", mnt.string()}}));
  EXPECT_TRUE(std::isinf(scrub_before.value("fsaudit_scrub_last_completed_age_seconds", {{"target", mnt.string()}, {"fs", "btrfs"}})));
  EXPECT_FALSE(scrub_before.has("fsaudit_scrub_last_result_info", {{"target", mnt.string()}}));  // never scrubbed

  const std::string marker = "FSAUDIT-LAB-R1-" + std::to_string(::getpid()) + "-BLOCK";
  auto expected = write_pattern_file(mnt / "data.bin", marker);
  m.reset();  // umount: everything on disk, caches of the devices dropped

  // Phase 1: overwrite 4 KiB of block 1 on device A only; read the file back.
  auto on_a = testing::find_offsets(a.device(), marker + "1-0;");
  auto on_b = testing::find_offsets(b.device(), marker + "1-0;");
  ASSERT_EQ(on_a.size(), 1u) << "raid1: one copy of block 1 per device";
  ASSERT_EQ(on_b.size(), 1u);
  ASSERT_TRUE(testing::overwrite(a.device(), on_a[0], std::string(4096, 'X')));
  EXPECT_EQ(testing::find_offsets(a.device(), marker + "1-0;").size(), 0u);

  m.emplace(a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();
  for (const auto& c : direct_reads(mnt / "data.bin", dir / "read.out", 8)) EXPECT_TRUE(c.ok()) << c.err;
  EXPECT_TRUE(slurp(dir / "read.out") == expected) << "raid1 must return the good copy";
  auto after_read = probe_now(mnt.string());
  if (corruption(after_read, a.device()) == 0) {
    // No reader landed on A's mirror: a scrub reads every copy.
    must({"btrfs", "scrub", "start", "-B", mnt.string()});
    after_read = probe_now(mnt.string());
  }
  EXPECT_GE(corruption(after_read, a.device()), 1) << "the corrupted device's counter rose";
  EXPECT_EQ(corruption(after_read, b.device()), 0) << "the healthy device's counter did not";

  // Phase 2: corrupt block 2 on A without reading it; only a scrub finds it, and its own counts say so.
  m.reset();
  auto on_a2 = testing::find_offsets(a.device(), marker + "2-0;");
  ASSERT_EQ(on_a2.size(), 1u);
  ASSERT_TRUE(testing::overwrite(a.device(), on_a2[0], std::string(4096, 'Y')));
  m.emplace(a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();
  double a_before_scrub = corruption(probe_now(mnt.string()), a.device());
  auto scrub = run({"btrfs", "scrub", "start", "-B", "-d", mnt.string()}, 300);
  EXPECT_EQ(scrub.exit_code, 0) << scrub.out << scrub.err;  // all repaired
  auto after = probe_now(mnt.string());
  auto scrubbed = scrub_now(mnt.string(), dir / "scrub-state");
  const std::string target = mnt.string();
  EXPECT_TRUE(scrubbed.has("fsaudit_scrub_last_result_info", {{"target", target}, {"result", "errors"}, {"started_by", "other"}}));
  EXPECT_EQ(scrubbed.value("fsaudit_scrub_last_error_causes", {{"target", target}, {"cause", "csum"}}), 1);
  EXPECT_EQ(scrubbed.value("fsaudit_scrub_last_errors", {{"target", target}, {"kind", "repaired"}}), 1);
  EXPECT_EQ(scrubbed.value("fsaudit_scrub_last_errors", {{"target", target}, {"kind", "uncorrectable"}}), 0);
  EXPECT_EQ(scrubbed.value("fsaudit_scrub_last_device_errors", {{"device", kname(a.device())}, {"kind", "found"}}), 1);
  EXPECT_EQ(scrubbed.value("fsaudit_scrub_last_device_errors", {{"device", kname(b.device())}, {"kind", "found"}}), 0);
  EXPECT_GT(scrubbed.value("fsaudit_scrub_last_start_timestamp_seconds", {{"target", target}}), 1.7e9);
  // Kernel 6.12 did not bump the device counter on scrub errors; kernels that do show it here.
  EXPECT_GE(corruption(after, a.device()), a_before_scrub);
  EXPECT_EQ(corruption(after, b.device()), 0);
  std::cout << "[lab] raid1: corruption counter " << kname(a.device()) << " = " << corruption(after, a.device())
            << " (before scrub " << a_before_scrub << "), " << kname(b.device()) << " = "
            << corruption(after, b.device()) << "\n";
}

TEST(BtrfsLab, SingleDataCorruptionIsEioAndUncorrectable) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  testing::TempDir dir("fsaudit-btrfs-lab");
  testing::LoopDevice a(dir.path(), "a.img", kDevSize);
  ASSERT_TRUE(a.ok());
  must({"mkfs.btrfs", "-q", "-f", "-d", "single", a.device()});
  ScrubStatusFileCleanup cleanup(a.device());
  auto mnt = dir / "mnt";
  std::optional<testing::Mount> m(std::in_place, a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();
  auto before = probe_now(mnt.string());
  EXPECT_EQ(before.value("fsaudit_filesystem_data_redundancy", {{"target", mnt.string()}, {"fs", "btrfs"}}), 0);
  EXPECT_TRUE(before.has("fsaudit_btrfs_used_bytes", {{"target", mnt.string()}, {"type", "data"}, {"profile", "single"}}));
  EXPECT_EQ(corruption(before, a.device()), 0);

  const std::string marker = "FSAUDIT-LAB-SINGLE-" + std::to_string(::getpid()) + "-BLOCK";
  write_pattern_file(mnt / "data.bin", marker);
  m.reset();
  auto offs = testing::find_offsets(a.device(), marker + "1-0;");
  ASSERT_EQ(offs.size(), 1u) << "single: one copy";
  ASSERT_TRUE(testing::overwrite(a.device(), offs[0], std::string(4096, 'Z')));
  m.emplace(a.device(), mnt, "btrfs");
  ASSERT_TRUE(m->ok()) << m->error();

  auto reads = direct_reads(mnt / "data.bin", dir / "read.out", 1);
  EXPECT_FALSE(reads[0].ok());
  EXPECT_NE(reads[0].err.find("Input/output error"), std::string::npos) << reads[0].err;
  auto after = probe_now(mnt.string());
  EXPECT_GE(corruption(after, a.device()), 1);
  EXPECT_GT(after.value("fsaudit_btrfs_nonredundant_used_bytes", {{"type", "data"}}), 0);

  auto scrub = run({"btrfs", "scrub", "start", "-B", mnt.string()}, 300);
  EXPECT_EQ(scrub.exit_code, 3) << "btrfs scrub exits 3 on uncorrectable errors: " << scrub.out << scrub.err;
  auto scrubbed = probe_now(mnt.string());
  auto scrub_counts = scrub_now(mnt.string(), dir / "scrub-state");
  EXPECT_GE(scrub_counts.value("fsaudit_scrub_last_errors", {{"kind", "uncorrectable"}}), 1);
  EXPECT_EQ(scrub_counts.value("fsaudit_scrub_last_errors", {{"kind", "repaired"}}), 0);
  EXPECT_GE(scrub_counts.value("fsaudit_scrub_last_device_errors", {{"device", kname(a.device())}, {"kind", "uncorrectable"}}), 1);
  std::cout << "[lab] single: corruption counter " << kname(a.device()) << " = " << corruption(scrubbed, a.device())
            << ", scrub uncorrectable = " << scrub_counts.value("fsaudit_scrub_last_errors", {{"kind", "uncorrectable"}}) << "\n";
}

}  // namespace
}  // namespace fsaudit::btrfs
