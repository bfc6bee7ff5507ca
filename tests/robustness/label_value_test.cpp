// Label values from outside become valid, bounded UTF-8, and a scrape carrying junk passes promtool.
#include <gtest/gtest.h>

#include <random>

#include "daemon/metrics/batch.hpp"
#include "daemon/metrics/label_value.hpp"
#include "daemon/metrics/store.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::metrics {
namespace {

TEST(LabelValue, KeepsValidTextAsIs) {
  EXPECT_EQ(clean_label_value("sdb1"), "sdb1");
  EXPECT_EQ(clean_label_value("/srv/zfs images/disk 1.img"), "/srv/zfs images/disk 1.img");
  EXPECT_EQ(clean_label_value("quote \" and back\\slash"), "quote \" and back\\slash");
  EXPECT_EQ(clean_label_value("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x92\xBE"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x92\xBE");
}

TEST(LabelValue, ReplacesInvalidBytesAndControls) {
  EXPECT_EQ(clean_label_value("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(clean_label_value("\xC3"), "\xEF\xBF\xBD");                      // cut sequence
  EXPECT_EQ(clean_label_value("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");      // overlong '/'
  EXPECT_EQ(clean_label_value("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(clean_label_value("\xF4\x90\x80\x80").substr(0, 3), "\xEF\xBF\xBD");  // above U+10FFFF
  EXPECT_EQ(clean_label_value("line1\nline2\tx\r"), "line1 line2 x ");
  EXPECT_EQ(clean_label_value(std::string("nul\0bell\a", 9)), "nul\xEF\xBF\xBD" "bell\xEF\xBF\xBD");
}

TEST(LabelValue, BoundsLengthAtACharacterBoundary) {
  std::string euros;
  for (int i = 0; i < 400; ++i) euros += "\xE2\x82\xAC";  // 1200 bytes
  auto c = clean_label_value(euros, 100);
  EXPECT_LE(c.size(), 100u);
  EXPECT_TRUE(c.ends_with("..."));
  EXPECT_TRUE(is_clean_label_value(c, 100));
  EXPECT_EQ((c.size() - 3) % 3, 0u) << "cut inside a character";
  EXPECT_EQ(clean_label_value(std::string(512, 'x')).size(), 512u);
  EXPECT_EQ(clean_label_value(std::string(513, 'x')).size(), 512u);
}

TEST(LabelValue, RandomBytesAlwaysComeOutClean) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 700, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng());
    auto c = clean_label_value(s);
    ASSERT_TRUE(is_clean_label_value(c)) << i;
    ASSERT_EQ(clean_label_value(c), c) << "not idempotent at " << i;
  }
}

// The exposition of a batch whose labels carry 64 KiB of binary junk (as a failure reason quoting a
// tool's output would) passes `promtool check metrics`.
TEST(LabelValue, JunkInEveryLabelStillGivesValidExposition) {
  std::mt19937 rng(7);
  std::string junk(64 << 10, '\0');
  for (auto& ch : junk) ch = static_cast<char>(rng());
  Batch b;
  b.info("fsaudit_probe_failure_info", "Why the probe's last run failed.",
         {{"probe", "zfs"}, {"target", "host"}, {"reason", "zpool status: not zpool status output (" + junk + ")"}});
  b.gauge("fsaudit_zfs_vdev_errors", "Vdev errors.", {{"pool", "my \"pool\"\\"}, {"vdev", junk.substr(0, 300)}}, 6);
  auto text = metrics::serialize(b);
  for (const auto& f : b.families())
    for (const auto& m : f.metric)
      for (const auto& l : m.label) EXPECT_TRUE(is_clean_label_value(l.value)) << l.name;
  testing::TempDir dir;
  testing::write_text(dir / "scrape.txt", text);
  auto r = testing::run({"sh", "-c", "promtool check metrics < '" + (dir / "scrape.txt").string() + "'"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
  // Lookups by the raw value still find the series (test helper).
  EXPECT_EQ(b.value("fsaudit_zfs_vdev_errors", {{"vdev", junk.substr(0, 300)}}), 6);
}

}  // namespace
}  // namespace fsaudit::metrics
