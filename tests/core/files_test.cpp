// read_file (daemon/core/files.hpp): whole files of any size up to the limit, one byte over is an error.
#include "daemon/core/files.hpp"

#include <gtest/gtest.h>

#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

using testing::TempDir;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

TEST(ReadFile, ReadsEverySizeWholeUpToTheLimitAndRefusesOneByteMore) {
  TempDir d("read-file");
  for (std::size_t n : {0ul, 1ul, 4095ul, 4096ul, 4097ul, 8192ul, 100000ul, 1ul << 20}) {
    auto f = d / ("f" + std::to_string(n));
    auto want = pattern(n);
    testing::write_text(f, want);
    auto got = read_file(f);
    ASSERT_TRUE(got.ok()) << n << ": " << got.error();
    EXPECT_EQ(*got, want) << n;
    auto exact = read_file(f, n);
    ASSERT_TRUE(exact.ok()) << n << ": " << exact.error();
    EXPECT_EQ(*exact, want) << n;
    if (n > 0) {
      auto over = read_file(f, n - 1);
      ASSERT_FALSE(over.ok()) << n;
      EXPECT_NE(over.error().find("too large"), std::string::npos) << over.error();
    }
  }
  auto missing = read_file(d / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot open"), std::string::npos) << missing.error();
}

// A procfs file has no size and comes in pieces: it is read to its end.
TEST(ReadFile, ReadsAProcFileToItsEnd) {
  auto got = read_file("/proc/self/maps");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_FALSE(got->empty());
  EXPECT_EQ(got->back(), '\n');
  EXPECT_NE(got->find("[stack]"), std::string::npos);
}

// The kernel prints a sysfs attribute whole into the first read: what one read returns is all of it.
TEST(ReadSysfsAttribute, ReadsARealAttributeAsReadFileDoesAndRegularFilesOfAnySize) {
  for (const char* attr : {"/sys/devices/system/cpu/online", "/sys/kernel/mm/transparent_hugepage/enabled"}) {
    if (!std::filesystem::exists(attr)) continue;
    auto whole = read_file(attr);
    auto once = read_sysfs_attribute(attr);
    ASSERT_TRUE(whole.ok() && once.ok()) << attr;
    EXPECT_EQ(*once, *whole) << attr;
    EXPECT_FALSE(once->empty()) << attr;
  }
  TempDir d("read-attr");
  for (std::size_t n : {0ul, 5ul, 4095ul, 4096ul, 4097ul, 20000ul}) {
    auto f = d / ("a" + std::to_string(n));
    auto want = pattern(n);
    testing::write_text(f, want);
    auto got = read_sysfs_attribute(f);
    ASSERT_TRUE(got.ok()) << n << ": " << got.error();
    EXPECT_EQ(*got, want) << n;
    if (n > 0) {
      EXPECT_FALSE(read_sysfs_attribute(f, n - 1).ok()) << n;
    }
  }
  EXPECT_FALSE(read_sysfs_attribute(d / "nope").ok());
}

// Absent, unreadable and malformed are three outcomes (issue 32): only the first may be silent, the
// other two carry the file and the errno or the bad text.
TEST(ReadAttribute, AbsentUnreadableAndJunkAreThreeOutcomes) {
  TempDir d("read-attr3");
  testing::write_text(d / "n", "42\n");
  testing::write_text(d / "junk", "4x2\n");
  std::filesystem::create_directory(d / "dir");

  auto ok = read_attribute(d / "n");
  ASSERT_TRUE(ok.ok()) << ok.reason();
  EXPECT_EQ(ok.text, "42\n");
  EXPECT_EQ(read_u64(ok).value(), std::optional<std::uint64_t>(42));
  EXPECT_EQ(read_i64(ok).value(), std::optional<std::int64_t>(42));

  auto absent = read_attribute(d / "nope");
  EXPECT_TRUE(absent.absent());
  EXPECT_EQ(absent.error, ENOENT);
  auto an = read_u64(absent);
  ASSERT_TRUE(an.ok()) << "an absent file is nothing there, the caller decides";
  EXPECT_FALSE(an->has_value());
  EXPECT_FALSE(absent.required_text().ok());
  EXPECT_FALSE(absent.optional_text()->has_value());

  // A directory opens but read() fails (EISDIR), as an attribute whose show() fails with EIO does.
  auto bad = read_attribute(d / "dir");
  EXPECT_TRUE(bad.unreadable());
  EXPECT_EQ(bad.error, EISDIR);
  auto bn = read_u64(bad);
  ASSERT_FALSE(bn.ok()) << "unreadable is not 'nothing there'";
  EXPECT_NE(bn.error().find((d / "dir").string()), std::string::npos) << bn.error();
  EXPECT_NE(bn.error().find("errno " + std::to_string(EISDIR)), std::string::npos) << bn.error();
  EXPECT_FALSE(bad.optional_text().ok());

  auto jn = read_u64(read_attribute(d / "junk"));
  ASSERT_FALSE(jn.ok());
  EXPECT_NE(jn.error().find("'4x2'"), std::string::npos) << jn.error();
  EXPECT_NE(jn.error().find((d / "junk").string()), std::string::npos) << jn.error();

  auto injected = FileRead::failure("/sys/fs/x/errors_count", EIO);
  EXPECT_TRUE(injected.unreadable());
  EXPECT_NE(injected.reason().find("Input/output error"), std::string::npos) << injected.reason();
  EXPECT_TRUE(FileRead::failure("/x", ENOENT).absent());
}

}  // namespace
}  // namespace fsaudit
