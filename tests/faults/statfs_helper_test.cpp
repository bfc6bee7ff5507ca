// statvfs through helper processes: same answers as statvfs(2), errno passed back, one reused helper,
// a helper that dies is replaced, nothing left behind. The hanging-filesystem cases are lab tests in
// faults_lab_test.cpp.
#include "probes/capacity/statfs_helper.hpp"

#include "daemon/core/child_exit.hpp"
#include "daemon/core/pipe_child.hpp"
#include "tests/support/lab.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

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
  // Has the pool start its first helper (a statfs of "/") and returns that helper's pid, or -1 with a
  // test failure.
  int first_helper() {
    struct statvfs s {};
    auto r = (*this)("/", &s);
    EXPECT_TRUE(r) << r.error();
    auto pids = helper_pids();
    EXPECT_EQ(pids.size(), 1u);
    return r && pids.size() == 1 ? pids[0] : -1;
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

// A cycle's statvfs calls asked in one go: requests in PIPE_BUF pieces (a few writes for 300 long paths,
// not 300), and each call then takes its own answer (the same as statvfs(2), errno included) without
// asking again, once: the next call on that path asks the helper.
TEST(StatfsHelpers, PrefetchAsksForHundredsOfPathsInAFewWritesAndEachCallTakesItsAnswerOnce) {
  fsaudit::testing::TempDir dir("fsaudit-statfs-prefetch");
  std::vector<std::string> paths{"/", "/proc", "/sys", "/nonexistent/fsaudit-statfs-prefetch"};
  std::size_t bytes = 0;
  for (int i = 0; i < 300; ++i) {
    auto p = dir / ("d" + std::to_string(i) + "-" + std::string(120, 'x'));
    fs::create_directory(p);
    paths.push_back(p.string());
  }
  for (const auto& p : paths) bytes += p.size() + 5;
  StatfsHelpers h;
  SystemClock clock;
  std::stop_source stop;
  h.prefetch(paths, stop.get_token(), clock, clock.now() + std::chrono::seconds(30));
  const auto writes = h.request_writes();
  EXPECT_GE(writes, bytes / PIPE_BUF) << "each piece fits in PIPE_BUF";
  EXPECT_LE(writes, bytes / (PIPE_BUF / 2) + 1);
  Call call(h);
  for (const auto& p : paths) {
    struct statvfs got {}, direct {};
    auto r = call(p, &got);
    ASSERT_TRUE(r) << p << ": " << r.error();
    const int want = ::statvfs(p.c_str(), &direct) == 0 ? 0 : errno;
    ASSERT_EQ(*r, want) << p;
    if (want != 0) continue;
    EXPECT_EQ(got.f_blocks, direct.f_blocks) << p;
    EXPECT_EQ(got.f_bsize, direct.f_bsize) << p;
    EXPECT_EQ(got.f_fsid, direct.f_fsid) << p;
    EXPECT_EQ(got.f_files, direct.f_files) << p;
  }
  EXPECT_EQ(h.request_writes(), writes) << "a prefetched call asked the helper again";
  EXPECT_EQ(h.processes(), 1u);
  struct statvfs again {};
  auto r = call("/", &again);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(h.request_writes(), writes + 1) << "an answer is taken once";
}

TEST(StatfsHelpers, AHelperKilledFromOutsideIsReplacedAndReaped) {
  StatfsHelpers h;
  Call call(h);
  const int helper = call.first_helper();
  ASSERT_GT(helper, 0);
  ::kill(helper, SIGKILL);
  for (int i = 0; i < 100 && ::kill(helper, 0) == 0 && helper_pids().size() == 1; ++i) ::usleep(10'000);
  struct statvfs s {};
  auto r = call("/", &s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, 0);
  auto now = helper_pids();
  ASSERT_EQ(now.size(), 1u) << "the killed helper was not reaped";
  EXPECT_NE(now[0], helper);
}

std::string exe_of(int pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

std::string cmdline_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& c : s)
    if (c == '\0') c = ' ';
  return s;
}

// Private (not shared with the parent) resident memory of a process, from smaps_rollup.
long private_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  long sum = 0;
  while (std::getline(in, line)) {
    long v = 0;
    if (std::sscanf(line.c_str(), "Private_Clean: %ld kB", &v) == 1 || std::sscanf(line.c_str(), "Private_Dirty: %ld kB", &v) == 1)
      sum += v;
  }
  return sum;
}

// The test program's main() calls helper_entry(), as fsauditd's does (tests/support/test_main.cpp):
// a helper is this program started again with the helper flag, not a fork holding a copy of the
// parent's memory.
TEST(StatfsHelpers, AHelperIsThisProgramExecdNotAFork) {
  ASSERT_TRUE(helpers_exec()) << helper_exec_failure();
  // The parent holds 64 MiB of touched heap: a forked child would share it copy-on-write and count it
  // as private once either side writes; an exec'd one never maps it.
  std::vector<char> ballast(64 << 20, 1);
  StatfsHelpers h;
  Call call(h);
  const int helper = call.first_helper();
  ASSERT_GT(helper, 0);
  EXPECT_EQ(exe_of(helper), exe_of(::getpid()));
  EXPECT_NE(cmdline_of(helper).find("--fsaudit-helper fsaudit-statfs"), std::string::npos) << cmdline_of(helper);
  std::fill(ballast.begin(), ballast.end(), 2);  // parent writes: a fork's shared pages would split now
  const long kib = private_kib(helper);
  ASSERT_GT(kib, 0) << "no smaps_rollup";
  std::printf("helper private memory: %ld KiB (parent: %ld KiB)\n", kib, private_kib(::getpid()));
  EXPECT_LT(kib, 16 * 1024) << "the helper holds the parent's memory";
  EXPECT_GT(ballast[12345], 0);
}

// A helper runs this program's static initialisers again; the test support's unshare of the mount
// namespace must not run in it: a namespace of its own would hold a copy of every mount of the test
// at that moment (a canary the test unmounts stayed mounted there, its device busy).
TEST(StatfsHelpers, AnExecdHelperSharesTheTestsMountNamespace) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  // Links the lab support (its initialiser) into this program and checks that it did unshare.
  ASSERT_TRUE(fsaudit::testing::lab_mounts_private());
  ASSERT_TRUE(helpers_exec()) << helper_exec_failure();
  StatfsHelpers h;
  Call call(h);
  const int helper = call.first_helper();
  ASSERT_GT(helper, 0);
  auto ns = [](const std::string& pid) {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/" + pid + "/ns/mnt", ec).string();
  };
  ASSERT_NE(ns("self"), "");
  EXPECT_EQ(ns(std::to_string(helper)), ns("self"));
}

// Where exec does not work (no /proc in a sandbox, a removed binary) helpers fork without exec, and
// the reason is kept; an empty executable turns exec off on purpose. Either way statfs answers.
TEST(StatfsHelpers, ExecFailureFallsBackToForkWithItsReason) {
  struct Restore {
    ~Restore() { set_helper_executable(std::nullopt); }
  } restore;
  set_helper_executable("/nonexistent/fsauditd");
  ASSERT_TRUE(helpers_exec());
  {
    StatfsHelpers h;
    Call call(h);
    struct statvfs s {};
    auto r = call("/", &s);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(*r, 0);
    EXPECT_FALSE(helpers_exec());
    EXPECT_NE(helper_exec_failure().find("/nonexistent/fsauditd"), std::string::npos) << helper_exec_failure();
    auto pids = helper_pids();
    ASSERT_EQ(pids.size(), 1u);
    EXPECT_EQ(cmdline_of(pids[0]).find("--fsaudit-helper"), std::string::npos) << cmdline_of(pids[0]);
  }
  EXPECT_TRUE(helper_pids().empty());
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // the child whose exec failed was reaped too
  set_helper_executable("");
  EXPECT_FALSE(helpers_exec());
  StatfsHelpers h;
  Call call(h);
  struct statvfs s {};
  auto r = call("/", &s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(helper_exec_failure(), "");
}

// A helper holds none of the daemon's standard streams: one stuck in the kernel on a hung mount would
// otherwise keep `fsauditd --once | ...` (or a test reading the daemon's output) waiting after the
// daemon has gone. Exec'd and forked alike.
TEST(StatfsHelpers, AHelperHoldsNoneOfTheDaemonsStandardStreams) {
  struct Restore {
    ~Restore() { set_helper_executable(std::nullopt); }
  } restore;
  for (bool exec : {true, false}) {
    set_helper_executable(exec ? std::nullopt : std::optional<std::string>(""));
    ASSERT_EQ(helpers_exec(), exec) << helper_exec_failure();
    StatfsHelpers h;
    Call call(h);
    const int helper = call.first_helper();
    ASSERT_GT(helper, 0);
    for (int fd : {0, 1, 2}) {
      std::error_code ec;
      auto target = fs::read_symlink("/proc/" + std::to_string(helper) + "/fd/" + std::to_string(fd), ec);
      EXPECT_EQ(target, "/dev/null") << (exec ? "exec'd" : "forked") << " helper, fd " << fd << ": " << ec.message();
    }
  }
}

// The pool's bookkeeping on pipes alone (no process behind them: nothing is killed, EOF is seen on
// the other end): reuse of the last one used, the end of ones a minute unused, the cap.
TEST(IdleChildren, ReusesTheLastEndsTheUnusedKeepsOneAndTheCap) {
  struct Pipes {
    int req[2], rep[2];
    PipeChild child(pid_t pid) { return PipeChild{pid, req[1], rep[0]}; }
    // The "child" end sees EOF once the pool closed its request end.
    bool ended() const {
      char c;
      return ::read(req[0], &c, 1) == 0;
    }
  };
  std::vector<Pipes> p(6);
  for (auto& x : p) ASSERT_TRUE(::pipe2(x.req, O_CLOEXEC | O_NONBLOCK) == 0 && ::pipe2(x.rep, O_CLOEXEC) == 0);
  IdleChildren idle(4, std::chrono::seconds(60));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> ended;
  idle.put(p[0].child(100), t0, ended);
  idle.put(p[1].child(101), t0 + std::chrono::seconds(10), ended);
  EXPECT_TRUE(ended.empty());
  auto c = idle.take();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pid, 101);  // the one used last
  idle.put(*c, t0 + std::chrono::seconds(20), ended);
  // 100 has waited 61 s when the next one comes back: it ends, the others stay.
  idle.put(p[2].child(102), t0 + std::chrono::seconds(61), ended);
  EXPECT_EQ(ended, std::vector<pid_t>{100});
  EXPECT_TRUE(p[0].ended());
  EXPECT_FALSE(p[1].ended());
  EXPECT_EQ(idle.size(), 2u);
  // Long unused, but the last idle one is kept (the next call needs no new process).
  ended.clear();
  c = idle.take();
  auto other = idle.take();
  ASSERT_TRUE(c && other);
  EXPECT_EQ(c->pid, 102);
  close_pipe_child(*other, false);
  idle.put(*c, t0 + std::chrono::seconds(500), ended);
  EXPECT_TRUE(ended.empty());
  // The cap: a fifth idle one ends the least recently used.
  idle.put(p[3].child(103), t0 + std::chrono::seconds(501), ended);
  idle.put(p[4].child(104), t0 + std::chrono::seconds(502), ended);
  idle.put(p[5].child(105), t0 + std::chrono::seconds(503), ended);
  EXPECT_TRUE(ended.empty());
  EXPECT_EQ(idle.size(), 4u);
  idle.put(PipeChild{106, ::dup(p[5].req[1]), ::dup(p[5].rep[0])}, t0 + std::chrono::seconds(504), ended);
  EXPECT_EQ(ended, std::vector<pid_t>{c->pid});
  EXPECT_EQ(idle.size(), 4u);
  auto rest = idle.end_all();
  EXPECT_EQ(rest, (std::vector<pid_t>{103, 104, 105, 106}));
  EXPECT_EQ(idle.size(), 0u);
  for (auto& x : p) {
    ::close(x.req[0]);
    ::close(x.rep[1]);
  }
}

// A call of the test's own, registered like the XFS geometry call: answers the helper's pid and the
// path's length, so the test sees where it ran.
int pid_and_length_call(const char* path, void* out, std::size_t cap, std::size_t* n) {
  std::uint32_t v[2] = {static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(std::strlen(path))};
  if (cap < sizeof v) return ERANGE;
  std::memcpy(out, v, sizeof v);
  *n = sizeof v;
  return path[1] == 'x' ? EXDEV : 0;
}
const HelperCallRegistration kPidAndLength{200, pid_and_length_call};

TEST(StatfsHelpers, RegisteredCallsRunInTheHelperUnknownOnesAreEnosys) {
  ASSERT_TRUE(helpers_exec()) << "the registry must be there in an exec'd helper, not only in a fork";
  StatfsHelpers h;
  SystemClock clock;
  std::stop_source stop;
  auto call = [&](std::uint8_t op, const std::string& path) {
    return h.call(op, path, stop.get_token(), clock, clock.now() + std::chrono::seconds(60));
  };
  auto r = call(200, "/some/path");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->err, 0);
  ASSERT_EQ(r->data.size(), 8u);
  std::uint32_t v[2];
  std::memcpy(v, r->data.data(), sizeof v);
  auto pids = helper_pids();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(static_cast<int>(v[0]), pids[0]);  // ran in the helper, not here
  EXPECT_EQ(v[1], 10u);
  r = call(200, "/x");  // the call's errno comes back, without data
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->err, EXDEV);
  EXPECT_TRUE(r->data.empty());
  r = call(201, "/");  // nothing registered under 201
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->err, ENOSYS);
  struct statvfs st {};  // and the same helper still does statvfs
  auto s = h.statvfs("/", &st, stop.get_token(), clock, clock.now() + std::chrono::seconds(60));
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(*s, 0);
  EXPECT_GT(st.f_blocks, 0u);
  EXPECT_EQ(helper_pids(), pids);
}

// Sleeps 300 ms in the helper: calls that overlap each hold a helper of their own.
int slow_call(const char*, void*, std::size_t, std::size_t* n) {
  ::usleep(300'000);
  *n = 0;
  return 0;
}
const HelperCallRegistration kSlow{202, slow_call};

// The state letter of each child of this process named like the helper (zombies included).
std::string helper_states() {
  std::string out;
  for (int pid : helper_pids()) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    auto close = line.rfind(')');
    out += close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
  }
  return out;
}

// Five calls at once need five helpers; the pool keeps four idle, and the fifth, told to end as it
// comes back, is gone (reaped) when its call returns: not a zombie until the pool's next use.
TEST(StatfsHelpers, AHelperToldToEndIsReapedBeforeItsCallReturns) {
  StatfsHelpers h;
  SystemClock clock;
  std::stop_source stop;
  std::vector<std::thread> calls;
  std::atomic<int> ok{0};
  for (int i = 0; i < 5; ++i)
    calls.emplace_back([&] {
      auto r = h.call(202, "/", stop.get_token(), clock, clock.now() + std::chrono::seconds(60));
      if (r && r->err == 0) ok.fetch_add(1);
    });
  for (auto& t : calls) t.join();
  ASSERT_EQ(ok.load(), 5);
  const std::string states = helper_states();
  EXPECT_EQ(states.size(), 4u) << states;
  EXPECT_EQ(states.find('Z'), std::string::npos) << states;
  EXPECT_EQ(h.processes(), 4u);
}

TEST(AwaitExit, SeesAnExitWithoutReapingAndGivesUpOnALiveChild) {
  pid_t quick = ::fork();
  if (quick == 0) {
    ::usleep(20'000);
    ::_exit(7);
  }
  ASSERT_GT(quick, 0);
  EXPECT_TRUE(await_exit(quick, std::chrono::milliseconds(5000)));
  int st = 0;
  ASSERT_EQ(::waitpid(quick, &st, WNOHANG), quick) << "await_exit reaped it, or it had not exited";
  EXPECT_EQ(WEXITSTATUS(st), 7);
  pid_t slow = ::fork();
  if (slow == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(slow, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(await_exit(slow, std::chrono::milliseconds(50)));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(45));
  EXPECT_LT(waited, std::chrono::milliseconds(2000));
  ::kill(slow, SIGKILL);
  EXPECT_TRUE(await_exit(slow, std::chrono::milliseconds(5000)));
  EXPECT_EQ(::waitpid(slow, &st, 0), slow);
  EXPECT_TRUE(WIFSIGNALED(st));
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
