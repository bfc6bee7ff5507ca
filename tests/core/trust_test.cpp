// Who may change a file that decides what fsauditd runs (daemon/core/trust.hpp).
#include "daemon/core/trust.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

using testing::TempDir;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The refusal's message ("" when trusted): a check that says no is always `refused`.
std::string why(const Result<void>& r) {
  if (r.ok()) return "";
  EXPECT_EQ(r.kind(), ErrorKind::refused) << r.error();
  return r.error();
}

TEST(TrustedFile, WritableByGroupOrOthersIsRefusedWithTheFix) {
  TempDir d("trust");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "{}\n");
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  uid_t me = ::geteuid();
  EXPECT_TRUE(check_trusted_file(f, me).ok());
  for (mode_t bad : {0664, 0646, 0666}) {
    ASSERT_EQ(::chmod(f.c_str(), bad), 0);
    auto problem = why(check_trusted_file(f, me));
    EXPECT_TRUE(has(problem, f.string()) && has(problem, "writable by group or others") &&
                has(problem, "chmod go-w " + f.string()))
        << problem;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", 0666u);
  EXPECT_TRUE(has(why(check_trusted_file(f, me)), std::string("mode ") + mode));
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  // The directory counts too (whoever can write it can replace the file), unless it is sticky.
  ASSERT_EQ(::chmod(d.path().c_str(), 0777), 0);
  auto problem = why(check_trusted_file(f, me));
  EXPECT_TRUE(has(problem, d.path().string() + " (owner") && has(problem, "chmod go-w " + d.path().string())) << problem;
  ASSERT_EQ(::chmod(d.path().c_str(), 01777), 0);
  EXPECT_TRUE(check_trusted_file(f, me).ok());
  EXPECT_TRUE(has(why(check_trusted_file(d / "missing.yaml", me)), "cannot stat"));
}

TEST(TrustedFile, RootTrustsRootOnlyAnUnprivilegedProcessAlsoItself) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the file away";
  TempDir d("trust");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "{}\n");
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  EXPECT_TRUE(check_trusted_file(f).ok());
  EXPECT_TRUE(check_trusted_file(f, 4242).ok());  // root-owned: trusted by everyone
  ASSERT_EQ(::chown(f.c_str(), 4242, 4242), 0);
  auto problem = why(check_trusted_file(f));
  EXPECT_TRUE(has(problem, "owned by uid 4242, not root") && has(problem, "chown root:root " + f.string())) << problem;
  EXPECT_TRUE(check_trusted_file(f, 4242).ok());  // its own file: it could do all that anyway
  problem = why(check_trusted_file(f, 4343));
  EXPECT_TRUE(has(problem, "owned by uid 4242, not root or uid 4343")) << problem;
  ASSERT_EQ(::chown(f.c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(d.path().c_str(), 4242, 4242), 0);
  problem = why(check_trusted_file(f));
  EXPECT_TRUE(has(problem, d.path().string() + " is owned by uid 4242")) << problem;
}

}  // namespace
}  // namespace fsaudit

namespace fsaudit {
namespace {

// Every directory from / down to the program counts, along the path as written and along the path
// its symlinks resolve to: whoever can write any of them can swap the program.
TEST(TrustedExecutable, EveryDirectoryAboveItAndBehindItsSymlinksCounts) {
  if (::geteuid() != 0) GTEST_SKIP() << "the files must be root's";
  TempDir d("trust-exe");
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  std::filesystem::create_directories(d / "a/b");
  std::filesystem::create_directories(d / "open");
  auto tool = d / "a/b/zpool";
  testing::write_text(tool, "#!/bin/sh\n");
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  EXPECT_TRUE(check_trusted_executable(tool, 0).ok());
  EXPECT_TRUE(check_trusted_executable("/bin/sh", 0).ok());
  ASSERT_EQ(::chmod((d / "a").c_str(), 0775), 0);  // two levels up: check_trusted_file alone misses it
  EXPECT_TRUE(check_trusted_file(tool).ok());
  auto problem = why(check_trusted_executable(tool, 0));
  EXPECT_TRUE(has(problem, (d / "a").string() + " (owner") && has(problem, "chmod go-w " + (d / "a").string())) << problem;
  ASSERT_EQ(::chmod((d / "a").c_str(), 0755), 0);
  // A symlink in a trusted place to a program in an open one.
  ASSERT_EQ(::chmod((d / "open").c_str(), 0777), 0);
  testing::write_text(d / "open/real", "#!/bin/sh\n");
  ASSERT_EQ(::chmod((d / "open/real").c_str(), 0755), 0);
  std::filesystem::create_symlink(d / "open/real", d / "a/b/link");
  problem = why(check_trusted_executable(d / "a/b/link", 0));
  EXPECT_TRUE(has(problem, "chmod go-w " + (d / "open").string())) << problem;
  EXPECT_TRUE(has(why(check_trusted_executable("zpool", 0)), "not an absolute path"));
  EXPECT_TRUE(has(why(check_trusted_executable(d / "missing", 0)), "cannot resolve"));
}

}  // namespace
}  // namespace fsaudit
