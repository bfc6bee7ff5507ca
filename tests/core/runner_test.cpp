#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <thread>

#include "daemon/runner/runner.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;
using namespace std::chrono_literals;

TEST(Runner, CapturesOutputAndExitCode) {
  ProcessRunner r;
  CommandSpec spec;
  spec.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  auto res = r.run(spec);
  EXPECT_TRUE(res.exited);
  EXPECT_EQ(res.exit_code, 3);
  EXPECT_EQ(res.out, "out\n");
  EXPECT_EQ(res.err, "err\n");
  EXPECT_EQ(res.describe(), "exit 3: err");
}

TEST(Runner, KillsTheWholeProcessGroupAtTheDeadline) {
  fsaudit::testing::TempDir dir;
  auto marker = dir / "grandchild-alive";
  ProcessRunner r;
  CommandSpec spec;
  // The grandchild would create the marker after 2 s if it survived the kill.
  spec.argv = {"sh", "-c", "(sleep 2; touch " + marker.string() + ") & sleep 600"};
  spec.timeout = 300ms;
  auto t0 = std::chrono::steady_clock::now();
  auto res = r.run(spec);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(res.timed_out);
  EXPECT_FALSE(res.ok());
  EXPECT_LT(took, 3s);
  EXPECT_EQ(res.describe().rfind("timed out after", 0), 0u) << res.describe();
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a grandchild outlived the timeout";
}

TEST(Runner, MissingToolIsAClearReason) {
  ProcessRunner r;
  CommandSpec spec;
  spec.argv = {"fsaudit-no-such-tool", "status"};
  auto res = r.run(spec);
  EXPECT_FALSE(res.ok());
  EXPECT_EQ(res.describe(), "fsaudit-no-such-tool: not found (is the package installed and in PATH?)");
  // Code decides on the kind: not_installed, kept by err_in.
  EXPECT_EQ(res.spawn_kind, ErrorKind::not_installed);
  auto e = err_in("zpool status: ", res);
  EXPECT_EQ(e.kind, ErrorKind::not_installed);
  EXPECT_EQ(e.message, "zpool status: " + res.describe());
  spec.argv = {"/nonexistent/fsaudit-no-such-tool"};
  EXPECT_EQ(r.run(spec).spawn_kind, ErrorKind::not_installed);
  // A tool that is there and fails, even saying "not found", is no missing tool.
  spec.argv = {"sh", "-c", "echo 'device not found' >&2; exit 1"};
  res = r.run(spec);
  EXPECT_EQ(res.describe(), "exit 1: device not found");
  EXPECT_EQ(res.spawn_kind, ErrorKind::failed);
  EXPECT_EQ(err_in("", res).kind, ErrorKind::failed);
}

TEST(Runner, SameKeyNeverRunsTwiceAtOnce) {
  ProcessRunner r;
  CommandSpec slow;
  slow.argv = {"sleep", "1"};
  slow.key = "zpool status tank";
  std::thread t([&] { r.run(slow); });
  std::this_thread::sleep_for(200ms);
  CommandSpec second;
  second.argv = {"true"};
  second.key = "zpool status tank";
  auto res = r.run(second);
  t.join();
  EXPECT_TRUE(res.busy);
  EXPECT_EQ(res.describe(), "previous run of the same command is still running");
  EXPECT_TRUE(r.run(second).ok());  // free again afterwards
}

TEST(Runner, BoundsOutput) {
  ProcessRunner r;
  CommandSpec spec;
  spec.argv = {"sh", "-c", "yes | head -c 1000000"};
  spec.max_output = 1000;
  auto res = r.run(spec);
  // Cut output is not a success: a parser would read the kept part as the whole truth.
  EXPECT_FALSE(res.ok());
  EXPECT_TRUE(res.exited && res.exit_code == 0);
  EXPECT_TRUE(res.truncated);
  EXPECT_EQ(res.out.size(), 1000u);
  EXPECT_NE(res.describe().find("cut short"), std::string::npos) << res.describe();
}

TEST(Runner, StopTokenCancels) {
  ProcessRunner r;
  std::stop_source src;
  std::thread t([&] {
    std::this_thread::sleep_for(200ms);
    src.request_stop();
  });
  CommandSpec spec;
  spec.argv = {"sleep", "30"};
  auto t0 = std::chrono::steady_clock::now();
  auto res = r.run(spec, src.get_token());
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(res.ok());
  EXPECT_EQ(res.describe(), "cancelled (daemon stopping)");
}

// Root runs only a program that root alone can change: a tool others may write (or one in a
// directory others may write) is refused with the file and the fix, and does not run.
TEST(Runner, RootRefusesAToolOthersCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "the check is root's (an unprivileged runner runs what its user may)";
  fsaudit::testing::TempDir d("runner-trust");
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  auto tool = d / "zpool";
  fsaudit::testing::write_text(tool, "#!/bin/sh\ntouch " + (d / "ran").string() + "\n");
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  ProcessRunner r;
  CommandSpec spec;
  spec.argv = {tool.string()};
  EXPECT_TRUE(r.run(spec).ok());
  std::filesystem::remove(d / "ran");
  ASSERT_EQ(::chmod(tool.c_str(), 0777), 0);
  auto res = r.run(spec);
  EXPECT_FALSE(res.ok());
  EXPECT_NE(res.describe().find("refusing to run " + tool.string() + " as root"), std::string::npos) << res.describe();
  EXPECT_NE(res.describe().find("chmod go-w " + tool.string()), std::string::npos) << res.describe();
  EXPECT_EQ(res.spawn_kind, ErrorKind::refused);
  EXPECT_FALSE(std::filesystem::exists(d / "ran"));
  // The file is fine, a directory above it is not.
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  std::filesystem::create_directories(d / "sub");
  auto deep = d / "sub" / "zpool";
  std::filesystem::copy_file(tool, deep);
  ASSERT_EQ(::chmod(deep.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(d.path().c_str(), 0777), 0);
  spec.argv = {deep.string()};
  res = r.run(spec);
  EXPECT_NE(res.describe().find("chmod go-w " + d.path().string()), std::string::npos) << res.describe();
  EXPECT_FALSE(std::filesystem::exists(d / "ran"));
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
}
