// statvfs through helper processes: same answers as statvfs(2), errno passed back, one reused helper,
// a helper that dies is replaced, nothing left behind. The hanging-filesystem cases are lab tests in
// faults_lab_test.cpp.
#include "probes/capacity/statfs_helper.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fsaudit::capacity {
namespace {

namespace fs = std::filesystem;

// Children of this process named like the helper.
std::vector<int> helper_pids() {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid() && line.substr(open + 1, close - open - 1) == "fsaudit-statfs") out.push_back(std::stoi(name));
  }
  return out;
}

struct Call {
  explicit Call(StatfsHelpers& helpers) : h(helpers) {}
  StatfsHelpers& h;
  SystemClock clock;
  std::stop_source stop;
  Result<int> operator()(const std::string& path, struct statvfs* out) {
    return h.statvfs(path, out, stop.get_token(), clock, clock.now() + std::chrono::seconds(60));
  }
};

TEST(StatfsHelpers, AnswersLikeStatvfsWithOneReusedHelper) {
  StatfsHelpers h;
  Call call(h);
  struct statvfs direct {};
  ASSERT_EQ(::statvfs("/", &direct), 0);
  for (int i = 0; i < 50; ++i) {
    struct statvfs s {};
    auto r = call("/", &s);
    ASSERT_TRUE(r) << r.error();
    ASSERT_EQ(*r, 0);
    EXPECT_EQ(s.f_blocks, direct.f_blocks);
    EXPECT_EQ(s.f_frsize, direct.f_frsize);
    EXPECT_EQ(s.f_files, direct.f_files);
  }
  EXPECT_EQ(h.processes(), 1u);
  EXPECT_EQ(helper_pids().size(), 1u);
}

TEST(StatfsHelpers, ErrnoComesBack) {
  StatfsHelpers h;
  Call call(h);
  struct statvfs s {};
  auto r = call("/nonexistent/fsaudit-statfs-helper-test", &s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, ENOENT);
  r = call(std::string(5000, 'x'), &s);
  EXPECT_FALSE(r);
}

TEST(StatfsHelpers, AHelperKilledFromOutsideIsReplacedAndReaped) {
  StatfsHelpers h;
  Call call(h);
  struct statvfs s {};
  ASSERT_TRUE(call("/", &s));
  auto pids = helper_pids();
  ASSERT_EQ(pids.size(), 1u);
  ::kill(pids[0], SIGKILL);
  for (int i = 0; i < 100 && ::kill(pids[0], 0) == 0 && helper_pids().size() == 1; ++i) ::usleep(10'000);
  auto r = call("/", &s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, 0);
  auto now = helper_pids();
  ASSERT_EQ(now.size(), 1u) << "the killed helper was not reaped";
  EXPECT_NE(now[0], pids[0]);
}

TEST(StatfsHelpers, NothingLeftAfterDestruction) {
  {
    StatfsHelpers h;
    Call call(h);
    struct statvfs s {};
    ASSERT_TRUE(call("/", &s));
  }
  EXPECT_TRUE(helper_pids().empty());
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // no child left, not even a zombie
}

}  // namespace
}  // namespace fsaudit::capacity
