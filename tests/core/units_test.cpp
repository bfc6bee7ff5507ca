#include <gtest/gtest.h>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

using namespace fsaudit;
using namespace std::chrono_literals;

TEST(Units, DurationsParse) {
  EXPECT_EQ(*parse_duration("30s"), 30s);
  EXPECT_EQ(*parse_duration("6h"), 6h);
  EXPECT_EQ(*parse_duration("7d"), std::chrono::hours(7 * 24));
  EXPECT_EQ(*parse_duration("250ms"), 250ms);
  EXPECT_EQ(*parse_duration("1h30m"), 90min);
  EXPECT_EQ(*parse_duration("1w"), std::chrono::hours(7 * 24));
  EXPECT_EQ(*parse_duration("15"), 15s);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
}

TEST(Units, BadDurationsExplainThemselves) {
  auto r = parse_duration("5x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "invalid duration \"5x\" (use a number with a unit: 250ms, 30s, 5m, 6h, 7d, 1w)");
  EXPECT_FALSE(parse_duration("").ok());
  EXPECT_FALSE(parse_duration("-3s").ok());
  EXPECT_FALSE(parse_duration("s").ok());
}

TEST(Units, SizesParse) {
  EXPECT_EQ(*parse_size("64MiB"), 64ull << 20);
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("1GiB"), 1ull << 30);
  EXPECT_EQ(*parse_size("1GB"), 1000000000ull);
  EXPECT_EQ(*parse_size("512B"), 512u);
  EXPECT_EQ(*parse_size("1.5KiB"), 1536u);
  auto bad = parse_size("64 megs");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("64MiB"), std::string::npos);
}

TEST(Units, HumanBytesAsToolsPrintThem) {
  EXPECT_DOUBLE_EQ(*parse_human_bytes("1.05K"), 1.05 * 1024);
  EXPECT_DOUBLE_EQ(*parse_human_bytes("27.9M"), 27.9 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parse_human_bytes("0B"), 0);
  EXPECT_DOUBLE_EQ(*parse_human_bytes("1.23GiB"), 1.23 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parse_human_bytes("432"), 432);
  EXPECT_FALSE(parse_human_bytes("lots").ok());
}

TEST(Strings, OctalEscapesOfMountinfo) {
  EXPECT_EQ(unescape_octal("/mnt/vm\\040images"), "/mnt/vm images");
  EXPECT_EQ(unescape_octal("a\\011b\\012c\\134d"), "a\tb\nc\\d");
  EXPECT_EQ(unescape_octal("trailing\\04"), "trailing\\04");
}

TEST(Strings, EditDistanceForSuggestions) {
  EXPECT_EQ(edit_distance("intervall", "interval"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_TRUE(glob_match("/srv/*", "/srv/data"));
  EXPECT_FALSE(glob_match("/srv/*", "/var/lib"));
}
