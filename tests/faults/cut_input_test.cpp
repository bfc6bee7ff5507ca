// The parsers of btrfs, bcachefs, md, XFS, ext4 and mountinfo on input that is empty, cut short or not
// their format: an error with a reason, never a success with part of the data. Cuts are taken at
// every byte of a fixture; for formats without an end marker a cut at a line boundary is a valid
// shorter output (caught through the runner's exit status / truncated flag), so only cuts inside a
// line are asserted there (the parsers of those formats refuse a text that ends inside a line: the
// tools end every line with a newline).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "daemon/probe/targets.hpp"
#include "probes/bcachefs/probe.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/ext4/probe.hpp"
#include "probes/md/probe.hpp"
#include "probes/xfs/probe.hpp"

namespace fsaudit {
namespace {

std::string fixture(const std::string& rel) {
  std::ifstream in(std::string(FSAUDIT_FIXTURES_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  // Written/captured fixtures start with "# source: ..." lines that are not tool output.
  while (s.rfind("# ", 0) == 0) s.erase(0, s.find('\n') + 1);
  return s;
}

const char* const kErrorStats =
    "btrfs/tree-single/sys/fs/btrfs/6be188f5-120e-49bb-84db-be126bd998dd/devinfo/1/error_stats";
const char* const kScrub = "written/btrfs/scrub-status-finished-csum-2417-corrected-305-uncorrectable-2112.txt";
const char* const kIoErrors =
    "bcachefs/tree/sys/fs/bcachefs/a9da1e6e-d4e5-4717-a520-408c8af4b084/dev-1/io_errors";
const char* const kMdstat = "md/mdstat-raid1-healthy.txt";
const std::string kMountinfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
    "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n";

const std::string kJunk = std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10) + "\xff\xfe garbage \x80\n";

// Every cut of `full` inside a line (not at a line end) must fail; `mid_line_only` = false: every cut.
template <class Parse>
void every_cut_fails(const std::string& full, Parse parse, bool mid_line_only, const char* what) {
  ASSERT_TRUE(parse(full)) << what << ": the fixture itself must parse";
  EXPECT_FALSE(parse("")) << what << ": empty";
  EXPECT_FALSE(parse("\n")) << what << ": one blank line";
  EXPECT_FALSE(parse(kJunk)) << what << ": binary junk";
  int checked = 0;
  for (std::size_t n = 1; n < full.size(); ++n) {
    if (mid_line_only && (full[n - 1] == '\n' || full[n] == '\n')) continue;
    if (mid_line_only && full.find('\n', n) == std::string::npos && n + 1 >= full.size()) continue;
    ++checked;
    EXPECT_FALSE(parse(full.substr(0, n))) << what << ": cut after " << n << " bytes:\n" << full.substr(0, n);
  }
  EXPECT_GT(checked, 0) << what;
}

TEST(CutInput, EmptyAndJunkAreErrors) {
  auto check = [](auto parse, const std::string& fixture_text, const char* what) {
    EXPECT_TRUE(parse(fixture_text)) << what << ": the fixture itself must parse";
    EXPECT_FALSE(parse("")) << what << ": empty";
    EXPECT_FALSE(parse("\n")) << what << ": one blank line";
    EXPECT_FALSE(parse(kJunk)) << what << ": binary junk";
  };
  check([](const std::string& s) { return btrfs::parse_device_stats(s).ok(); },
        fixture("written/btrfs/device-stats-single-all-zero.txt"), "device stats");
  check([](const std::string& s) { return btrfs::parse_error_stats(s).ok(); }, fixture(kErrorStats), "error_stats");
  check([](const std::string& s) { return btrfs::parse_scrub_status(s).ok(); }, fixture(kScrub), "scrub status");
  check([](const std::string& s) { return bcachefs::parse_io_errors(s).ok(); }, fixture(kIoErrors), "io_errors");
  check([](const std::string& s) { return md::parse_mdstat(s).ok(); }, fixture(kMdstat), "mdstat");
  check([](const std::string& s) { return xfs::parse_spaceman_health(s).ok(); },
        fixture("captured/xfs/spaceman-health-fresh-mount.txt"), "spaceman health");
  EXPECT_FALSE(ext4::parse_ext4_sysfs({}));
  EXPECT_FALSE(ext4::parse_ext4_sysfs({{"errors_count", ""}}));
  EXPECT_FALSE(ext4::parse_ext4_sysfs({{"errors_count", kJunk}}));
  EXPECT_TRUE(ext4::parse_ext4_sysfs({{"errors_count", "0\n"}}));
  EXPECT_FALSE(parse_mountinfo(kJunk));
}

TEST(CutInput, BtrfsErrorStatsCutInsideALine) {
  every_cut_fails(fixture(kErrorStats), [](const std::string& s) { return btrfs::parse_error_stats(s).ok(); }, true,
                  "error_stats");
}

TEST(CutInput, MdstatCutBeforeItsEndLine) {
  std::string full = fixture(kMdstat);
  auto end_line = full.find("unused devices");
  ASSERT_NE(end_line, std::string::npos);
  for (std::size_t n = 1; n <= end_line; ++n)
    EXPECT_FALSE(md::parse_mdstat(full.substr(0, n)).ok()) << "cut after " << n << " bytes";
}

TEST(CutInput, MountinfoCutInsideALine) {
  ASSERT_TRUE(parse_mountinfo(kMountinfo));
  for (std::size_t n = 1; n < kMountinfo.size(); ++n) {
    if (kMountinfo[n - 1] == '\n') continue;
    EXPECT_FALSE(parse_mountinfo(kMountinfo.substr(0, n))) << "cut after " << n;
  }
}

// Gaps this file found once: a cut or empty input that used to parse.
TEST(CutInput, BtrfsDeviceStatsCutInsideALine) {  // a cut last line is skipped as unrecognised
  every_cut_fails(fixture("written/btrfs/device-stats-single-all-zero.txt"),
                  [](const std::string& s) { return btrfs::parse_device_stats(s).ok(); }, true, "device stats");
}

TEST(CutInput, BtrfsScrubStatusCutInsideALine) {
  every_cut_fails(fixture(kScrub), [](const std::string& s) { return btrfs::parse_scrub_status(s).ok(); }, true,
                  "scrub status");
}

TEST(CutInput, BcachefsIoErrorsCut) {  // e.g. the header line alone is a success with no counters
  every_cut_fails(fixture(kIoErrors), [](const std::string& s) { return bcachefs::parse_io_errors(s).ok(); }, true,
                  "io_errors");
}

TEST(CutInput, MdstatCutInsideItsEndLine) {  // "unused dev" is taken as the end line
  std::string full = fixture(kMdstat);
  for (std::size_t n = full.find("unused devices") + 1; n + 1 < full.size(); ++n)
    EXPECT_FALSE(md::parse_mdstat(full.substr(0, n)).ok()) << "cut after " << n << " bytes";
}

TEST(CutInput, MountinfoEmptyIsAnError) {  // an empty table parses as "no mounts"
  EXPECT_FALSE(parse_mountinfo(""));
  EXPECT_FALSE(parse_mountinfo("\n"));
}

TEST(CutInput, Ext4JunkInAnOptionalField) {  // ignored instead of reported
  EXPECT_FALSE(ext4::parse_ext4_sysfs({{"errors_count", "1"}, {"first_error_time", "12x"}}));
}

}  // namespace
}  // namespace fsaudit
