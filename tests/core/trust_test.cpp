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

TEST(TrustedFile, WritableByGroupOrOthersIsRefusedWithTheFix) {
  TempDir d("trust");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "{}\n");
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  uid_t me = ::geteuid();
  EXPECT_EQ(trusted_file_problem(f, me), "");
  for (mode_t bad : {0664, 0646, 0666}) {
    ASSERT_EQ(::chmod(f.c_str(), bad), 0);
    auto why = trusted_file_problem(f, me);
    EXPECT_TRUE(has(why, f.string()) && has(why, "writable by group or others") && has(why, "chmod go-w " + f.string()))
        << why;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", 0666u);
  EXPECT_TRUE(has(trusted_file_problem(f, me), std::string("mode ") + mode));
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  // The directory counts too (whoever can write it can replace the file), unless it is sticky.
  ASSERT_EQ(::chmod(d.path().c_str(), 0777), 0);
  auto why = trusted_file_problem(f, me);
  EXPECT_TRUE(has(why, d.path().string() + " (owner") && has(why, "chmod go-w " + d.path().string())) << why;
  ASSERT_EQ(::chmod(d.path().c_str(), 01777), 0);
  EXPECT_EQ(trusted_file_problem(f, me), "");
  EXPECT_TRUE(has(trusted_file_problem(d / "missing.yaml", me), "cannot stat"));
}

TEST(TrustedFile, RootTrustsRootOnlyAnUnprivilegedProcessAlsoItself) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the file away";
  TempDir d("trust");
  auto f = d / "fsaudit.yaml";
  testing::write_text(f, "{}\n");
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  EXPECT_EQ(trusted_file_problem(f), "");
  EXPECT_EQ(trusted_file_problem(f, 4242), "");  // root-owned: trusted by everyone
  ASSERT_EQ(::chown(f.c_str(), 4242, 4242), 0);
  auto why = trusted_file_problem(f);
  EXPECT_TRUE(has(why, "owned by uid 4242, not root") && has(why, "chown root:root " + f.string())) << why;
  EXPECT_EQ(trusted_file_problem(f, 4242), "");  // its own file: it could do all that anyway
  why = trusted_file_problem(f, 4343);
  EXPECT_TRUE(has(why, "owned by uid 4242, not root or uid 4343")) << why;
  ASSERT_EQ(::chown(f.c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(d.path().c_str(), 4242, 4242), 0);
  why = trusted_file_problem(f);
  EXPECT_TRUE(has(why, d.path().string() + " is owned by uid 4242")) << why;
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
  EXPECT_EQ(trusted_executable_problem(tool, 0), "");
  EXPECT_EQ(trusted_executable_problem("/bin/sh", 0), "");
  ASSERT_EQ(::chmod((d / "a").c_str(), 0775), 0);  // two levels up: trusted_file_problem alone misses it
  EXPECT_EQ(trusted_file_problem(tool), "");
  auto why = trusted_executable_problem(tool, 0);
  EXPECT_TRUE(has(why, (d / "a").string() + " (owner") && has(why, "chmod go-w " + (d / "a").string())) << why;
  ASSERT_EQ(::chmod((d / "a").c_str(), 0755), 0);
  // A symlink in a trusted place to a program in an open one.
  ASSERT_EQ(::chmod((d / "open").c_str(), 0777), 0);
  testing::write_text(d / "open/real", "#!/bin/sh\n");
  ASSERT_EQ(::chmod((d / "open/real").c_str(), 0755), 0);
  std::filesystem::create_symlink(d / "open/real", d / "a/b/link");
  why = trusted_executable_problem(d / "a/b/link", 0);
  EXPECT_TRUE(has(why, "chmod go-w " + (d / "open").string())) << why;
  EXPECT_TRUE(has(trusted_executable_problem("zpool", 0), "not an absolute path"));
  EXPECT_TRUE(has(trusted_executable_problem(d / "missing", 0), "cannot resolve"));
}

}  // namespace
}  // namespace fsaudit
