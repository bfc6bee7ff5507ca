// Fault tests against the real daemon: a filesystem whose statfs/fsync never return (a FUSE program),
// a loop device detached under a mounted filesystem, journald restarted/rotated/vacuumed under the
// kernel log watcher with an invalid saved cursor, and a SIGKILL restart storm while kernel error lines
// keep arriving.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/klog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/capacity/statfs_helper.hpp"
#include "probes/kernel_log/probe.hpp"
#include <nlohmann/json.hpp>
#include "tests/support/daemon_process.hpp"
#include "tests/support/journald.hpp"
#include "tests/support/kernel_log.hpp"
#include "tests/support/lab.hpp"

namespace fsaudit::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// "major:minor" of the filesystem mounted at `dir` (from mountinfo, which never calls into it), or "".
std::string mount_dev(const fs::path& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, dev, root, point;
    ls >> id >> parent >> dev >> root >> point;
    if (point == dir.string()) return dev;
  }
  return "";
}

// The hanging FUSE filesystem, mounted at `dir`. The guard releases every blocked call, aborts the
// FUSE connection (so nothing can stay blocked in the kernel), unmounts lazily and ends the program,
// also when the test fails.
class HangFs {
 public:
  // With `backing`, /disk.img in it reads and writes that file until fail() makes every I/O fail (EIO).
  // With `statfs_answers`, only fsync blocks.
  explicit HangFs(fs::path dir, const fs::path& backing = {}, bool statfs_answers = false) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 1);
      ::dup2(null, 2);
      if (statfs_answers)
        ::execl(FSAUDIT_HANG_FS, "fsaudit-hang-fs", "--statfs-answers", dir_.c_str(), nullptr);
      else if (backing.empty())
        ::execl(FSAUDIT_HANG_FS, "fsaudit-hang-fs", dir_.c_str(), nullptr);
      else
        ::execl(FSAUDIT_HANG_FS, "fsaudit-hang-fs", dir_.c_str(), backing.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 100 && (dev_ = mount_dev(dir_)).empty(); ++i) ::usleep(50'000);
  }
  ~HangFs() {
    release();
    if (!dev_.empty()) {
      auto colon = dev_.find(':');
      // The connection's directory is named by the device's minor number.
      fs::path abort = fs::path("/sys/fs/fuse/connections") / dev_.substr(colon + 1) / "abort";
      if (fs::exists(abort)) std::ofstream(abort) << "1\n";  // only where fusectl is mounted
      if (!mount_dev(dir_).empty()) run({"umount", "-l", dir_.string()}, 10);
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      for (int i = 0; i < 60 && ::waitpid(pid_, &st, WNOHANG) == 0; ++i) ::usleep(50'000);
      if (::waitpid(pid_, &st, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
      }
    }
  }
  bool ok() const { return pid_ > 0 && !dev_.empty(); }
  void release() {
    if (pid_ > 0) ::kill(pid_, SIGUSR1);
  }
  void fail() {
    if (pid_ > 0) ::kill(pid_, SIGUSR2);
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  std::string dev_;
};

std::string fast_config(int port, const fs::path& state, const std::vector<fs::path>& targets,
                        const std::string& probes, const std::string& extra = "") {
  std::string t;
  for (const auto& p : targets) t += (t.empty() ? "" : ", ") + std::string("{path: ") + p.string() + "}";
  return "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + state.string() +
         "\ntargets:\n  discover: false\n  explicit: [" + t + "]\nprobes:\n" + probes + extra;
}

// 'Z' once the process's main thread has exited, even while another of its threads is still blocked in
// the kernel (the process cannot be reaped until that thread returns).
char proc_state(int pid) {
  auto s = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!s) return 0;
  auto close = s->rfind(')');
  return close == std::string::npos || close + 2 >= s->size() ? 0 : (*s)[close + 2];
}

// Threads of a process (entries in /proc/PID/task).
int task_count(int pid) {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// (pid, state) of every process whose parent is `pid`.
std::vector<std::pair<int, char>> children_with_state(int pid) {
  std::vector<std::pair<int, char>> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto s = read_file(it->path() / "stat");
    if (!s) continue;
    auto close = s->rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(s->substr(close + 2));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) out.emplace_back(std::stoi(name), state);
  }
  return out;
}
std::vector<int> child_pids(int pid) {
  std::vector<int> out;
  for (auto& [p, st] : children_with_state(pid)) out.push_back(p);
  return out;
}

// Releases the hanging filesystem on scope exit: declared after the DaemonProcess, it runs before the
// daemon's guard, which could otherwise wait forever to reap a process with a thread blocked in FUSE.
struct ReleaseFirst {
  HangFs& fs;
  ~ReleaseFirst() { fs.release(); }
};

double value_or(const std::string& text, const std::string& name, const std::map<std::string, std::string>& l,
                double dflt) {
  double v = scrape_value(text, name, l);
  return std::isnan(v) ? dflt : v;
}

class HangFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FSAUDIT_REQUIRE_LAB_OR_SKIP();
    if (std::string(FSAUDIT_HANG_FS).empty() || !fs::exists("/dev/fuse")) {
      if (lab_required()) FAIL() << "no libfuse3 or /dev/fuse (scripts/install-deps.sh installs libfuse3-dev fuse3)";
      GTEST_SKIP() << "no libfuse3 or /dev/fuse";
    }
  }
  const std::string probes_ =
      "  capacity: {interval: 1s, jitter: 0s, timeout: 2s}\n  mount: {interval: 1s, jitter: 0s, timeout: 2s}\n";
};

// SIGTERM while the filesystem still hangs: the daemon exits, reaped, exit 0, within its grace (3 s)
// plus slack for a loaded machine. Then the filesystem is released: the blocked calls return in the
// orphaned helper processes, whose answers have nowhere to go, and every one of them ends.
void sigterm_exits_then_helpers_end(DaemonProcess& d, HangFs& hfs) {
  const std::vector<int> helpers = child_pids(d.pid());
  auto t0 = Clock::now();
  const int code = d.stop(60);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("SIGTERM to reaped: %.2f s (exit %d)\n", secs, code);
  EXPECT_EQ(code, 0) << "SIGTERM with a hung filesystem: not reaped after " << secs << " s\n" << d.log();
  EXPECT_LT(secs, 10) << d.log();
  hfs.release();
  for (int i = 0; i < 200; ++i) {
    bool any = false;
    for (int p : helpers) any = any || (::kill(p, 0) == 0 && proc_state(p) != 'Z');
    if (!any) break;
    DaemonProcess::sleep_ms(50);
  }
  for (int p : helpers) EXPECT_TRUE(::kill(p, 0) != 0 || proc_state(p) == 'Z') << "helper " << p << " still running";
}

// A small ext4 on a loop device this test made: the healthy target next to the hung one (the latency
// sampler writes its probe file there, never on the host's own filesystems).
struct HealthyExt4 {
  explicit HealthyExt4(const fs::path& dir) : loop(dir, "healthy.img", 64ull << 20) {
    if (loop.ok() && run({"mkfs.ext4", "-q", "-F", loop.device()}).ok())
      mount = std::make_unique<Mount>(loop.device(), dir / "healthy", "ext4");
  }
  bool ok() const { return mount && mount->ok(); }
  fs::path path() const { return mount->dir(); }
  LoopDevice loop;
  std::unique_ptr<Mount> mount;
};

// The resting thread and child-process counts of `pid`: the lowest of five readings 100 ms apart (a
// sample of the healthy stack in flight adds a thread for a moment; a leak raises the resting count).
// A zombie counts when the same child is one in two readings in a row: a child that has just exited
// is one for the moment before its reaper wakes; one left unreaped stays one.
struct Resting {
  int tasks = 0, children = 0, zombies = 0;
  std::string zombie_names;  // " pid(comm)" of each zombie that stayed
};
Resting resting_counts(int pid) {
  Resting r{1 << 20, 1 << 20, 0, ""};
  std::set<int> last_zombies;
  for (int i = 0; i < 5; ++i) {
    if (i) DaemonProcess::sleep_ms(100);
    r.tasks = std::min(r.tasks, task_count(pid));
    auto c = children_with_state(pid);
    r.children = std::min(r.children, static_cast<int>(c.size()));
    std::set<int> zombies;
    for (auto& [p, st] : c) {
      if (st != 'Z') continue;
      zombies.insert(p);
      if (!last_zombies.count(p)) continue;
      r.zombies += 1;
      r.zombie_names += " " + std::to_string(p) + "(" +
                        std::string(trim(read_file("/proc/" + std::to_string(p) + "/comm").value_or(""))) + ")";
    }
    last_zombies = std::move(zombies);
  }
  return r;
}

// Threads of `pid` in uninterruptible sleep (blocked in the kernel, e.g. in a FUSE request), by name.
// Threads of `pid` blocked in the kernel: in uninterruptible sleep (D), or waiting for a FUSE
// answer (request_wait_answer: FUSE waits interruptibly, state S, until a signal arrives, then
// killably, state D).
std::string threads_in_d_state(int pid) {
  std::string out;
  std::error_code ec;
  const fs::path dir = "/proc/" + std::to_string(pid) + "/task";
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto s = read_file(it->path() / "stat");
    auto close = s ? s->rfind(')') : std::string::npos;
    if (close == std::string::npos || close + 2 >= s->size()) continue;
    const bool d_state = (*s)[close + 2] == 'D';
    const bool in_fuse = read_file(it->path() / "wchan").value_or("").find("request_wait_answer") != std::string::npos;
    if (!d_state && !in_fuse) continue;
    out += " " + it->path().filename().string() + "(" + std::string(trim(read_file(it->path() / "comm").value_or(""))) + ")";
  }
  return out;
}

// statfs never returns on one target, with the fsync latency sampler on (default settings; the hung
// filesystem is one of its stacks, a healthy ext4 the other): the capacity job and the sampler of that
// stack are marked stuck, the other target keeps updating (capacity and latency samples), nothing piles
// up (threads, helper processes, zombies) over 20 intervals, the daemon still serves /metrics and exits,
// reaped, on SIGTERM while the calls are still blocked in the kernel (in helper processes).
TEST_F(HangFsTest, StatfsNeverReturnsTargetStuckOthersUpdateSigtermExits) {
  TempDir dir("fsaudit-fault-hang");
  const fs::path hang = dir / "hang";
  HealthyExt4 healthy(dir.path());
  ASSERT_TRUE(healthy.ok()) << "no loop ext4 for the healthy target";
  const fs::path plain = healthy.path();
  HangFs hfs(hang);
  ASSERT_TRUE(hfs.ok()) << "FUSE mount at " << hang << " did not appear";
  int port = free_port();
  DaemonProcess d(dir.path(), fast_config(port, dir / "state", {hang, plain}, probes_), port);
  ReleaseFirst release_first{hfs};
  const std::map<std::string, std::string> hang_cap{{"probe", "capacity"}, {"target", hang.string()}};
  const std::string plain_t = plain.string();
  const std::map<std::string, std::string> plain_cap{{"probe", "capacity"}, {"target", plain_t}};
  const std::map<std::string, std::string> hang_stuck{{"target", hang.string()}, {"state", "stuck"}};
  const std::map<std::string, std::string> plain_lat{{"target", plain_t}};
  auto text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_probe_stuck", hang_cap) == 1 &&
           scrape_value(s, "fsaudit_latency_sampler_state", hang_stuck) == 1 &&
           value_or(s, "fsaudit_fsync_latency_seconds_count", plain_lat, 0) >= 1;
  }, 60);
  ASSERT_EQ(scrape_value(text, "fsaudit_probe_stuck", hang_cap), 1)
      << scrape_lines(text, "fsaudit_probe_stuck") << d.log();
  ASSERT_EQ(scrape_value(text, "fsaudit_latency_sampler_state", hang_stuck), 1)
      << scrape_lines(text, "fsaudit_latency_sampler_state") << d.log();
  // fsaudit_probe_stuck is present only while true; run counters and timings are per probe.
  const std::map<std::string, std::string> cap{{"probe", "capacity"}};
  EXPECT_EQ(value_or(text, "fsaudit_probe_stuck", plain_cap, 0), 0);
  // Not failing: a per-filesystem probe's success is a series only while it fails.
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", plain_cap))) << scrape_lines(text, "fsaudit_probe_success");
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_timeouts_total", cap), 1) << scrape_lines(text, "fsaudit_probe_timeouts_total");
  // The sampler's own job is not stuck: it waits for no stack past its deadline.
  EXPECT_EQ(value_or(text, "fsaudit_probe_stuck", {{"probe", "latency"}}, 0), 0) << scrape_lines(text, "fsaudit_probe_stuck");
  const double runs1 = scrape_value(text, "fsaudit_probe_runs_total", cap);
  const double last1 = scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", cap);
  const double lat1 = scrape_value(text, "fsaudit_fsync_latency_seconds_count", plain_lat);
  ASSERT_FALSE(std::isnan(runs1)) << scrape_lines(text, "fsaudit_probe_runs_total");
  DaemonProcess::sleep_ms(3500);
  text = d.scrape();
  ASSERT_FALSE(text.empty()) << "/metrics stopped answering while a probe is stuck";
  // Only the plain target can add runs (the stuck one is not started again), so the probe's runs
  // growing means the plain target keeps updating.
  EXPECT_GE(scrape_value(text, "fsaudit_probe_runs_total", cap), runs1 + 2)
      << scrape_lines(text, "fsaudit_probe_runs_total");
  EXPECT_GT(scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", cap), last1);
  EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", plain_t}}), 0)
      << scrape_lines(text, "fsaudit_filesystem_size_bytes");
  // The sampler publishes every 5 s: its next batch shows the healthy stack's newer samples.
  text = d.wait_for([&](const std::string& s) {
    return value_or(s, "fsaudit_fsync_latency_seconds_count", plain_lat, 0) >= lat1 + 1;
  }, 15);
  EXPECT_GE(scrape_value(text, "fsaudit_fsync_latency_seconds_count", plain_lat), lat1 + 1)
      << scrape_lines(text, "fsaudit_fsync_latency_seconds_count") << d.log();
  // Not started again while stuck, and nothing piles up: over 20 more intervals the daemon's resting
  // thread count grows by at most one (the worker pool adds one thread per stuck call, once, the first
  // time work queues while every other worker is busy: when that happens depends on timing, slower
  // under ASan), never once per interval; its child processes (statfs helpers: one held by the hung capacity call, one
  // serving the other target, one the setup probe's cancelled call may leave on the hung mount;
  // sampler processes: one held by the hung stack, one serving the other) stay at most 5, none a zombie.
  std::vector<int> tasks, kids;
  int zombies = 0;
  std::string zombie_names;
  for (int i = 0; i < 20; ++i) {
    DaemonProcess::sleep_ms(500);
    auto r = resting_counts(d.pid());
    tasks.push_back(r.tasks);
    kids.push_back(r.children);
    zombies += r.zombies;
    zombie_names += r.zombie_names;
  }
  std::string series;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    series += " " + std::to_string(tasks[i]) + "/" + std::to_string(kids[i]);
  std::printf("threads/children per interval while stuck:%s\n", series.c_str());
  EXPECT_LE(*std::max_element(tasks.begin(), tasks.end()), tasks.front() + 1) << series;
  EXPECT_LE(*std::max_element(kids.begin(), kids.end()), 5) << series;
  EXPECT_GE(*std::min_element(kids.begin(), kids.end()), 2) << series;
  EXPECT_EQ(zombies, 0) << series << "; zombies seen:" << zombie_names;
  text = d.scrape();
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_timeouts_total", cap), 1) << scrape_lines(text, "fsaudit_probe_timeouts_total");
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_stuck", hang_cap), 1);
  EXPECT_EQ(scrape_value(text, "fsaudit_latency_sampler_state", hang_stuck), 1);
  EXPECT_GE(scrape_value(text, "fsaudit_probe_runs_total", cap), runs1 + 15) << scrape_lines(text, "fsaudit_probe_runs_total");
  text = d.wait_for([&](const std::string& s) {  // published every 5 s
    return value_or(s, "fsaudit_fsync_latency_seconds_count", plain_lat, 0) >= lat1 + 8;
  }, 15);
  EXPECT_GE(scrape_value(text, "fsaudit_fsync_latency_seconds_count", plain_lat), lat1 + 8)
      << scrape_lines(text, "fsaudit_fsync_latency_seconds_count");
  EXPECT_EQ(threads_in_d_state(d.pid()), "") << "a daemon thread is blocked in the kernel";
  // SIGTERM: the daemon exits and is reaped while statfs is still blocked, without releasing the
  // filesystem: the blocked calls belong to helper processes (left to init), not to daemon threads.
  sigterm_exits_then_helpers_end(d, hfs);
  EXPECT_NE(d.log().find("still stuck"), std::string::npos) << d.log();
}

// statfs answers, fsync never does: the latency sampler gets as far as the fsync of its probe file on
// the hung filesystem (the file's first fill, or a sample) and blocks there. That write+fsync runs in a
// sampler process, not in a daemon thread or one of io_uring's io-wq workers (which are daemon threads
// and would keep the exited daemon from being reaped until the filesystem answers): that stack is
// stuck, the healthy stack keeps sampling, every other job of the hung target (capacity) keeps
// running, /metrics answers and passes promtool, and SIGTERM ends the daemon, reaped, exit 0.
TEST_F(HangFsTest, FsyncNeverReturnsUnderTheLatencySamplerStuckOthersSampleSigtermExits) {
  TempDir dir("fsaudit-fault-fsync");
  const fs::path hang = dir / "hang";
  HealthyExt4 healthy(dir.path());
  ASSERT_TRUE(healthy.ok()) << "no loop ext4 for the healthy target";
  const fs::path plain = healthy.path();
  HangFs hfs(hang, {}, true);
  ASSERT_TRUE(hfs.ok()) << "FUSE mount at " << hang << " did not appear";
  int port = free_port();
  DaemonProcess d(dir.path(), fast_config(port, dir / "state", {hang, plain}, probes_), port);
  ReleaseFirst release_first{hfs};
  const std::map<std::string, std::string> hang_stuck{{"target", hang.string()}, {"state", "stuck"}};
  const std::map<std::string, std::string> plain_lat{{"target", plain.string()}};
  const std::map<std::string, std::string> hang_cap{{"probe", "capacity"}, {"target", hang.string()}};
  auto text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_latency_sampler_state", hang_stuck) == 1 &&
           value_or(s, "fsaudit_fsync_latency_seconds_count", plain_lat, 0) >= 1;
  }, 60);
  ASSERT_EQ(scrape_value(text, "fsaudit_latency_sampler_state", hang_stuck), 1)
      << scrape_lines(text, "fsaudit_latency_sampler_state") << d.log();
  // The sampler process of the hung stack is the one blocked in the kernel, in the FUSE request (its
  // io_uring worker thread, or itself in pwrite+fsync mode).
  std::string blocked;
  for (int i = 0; i < 100 && blocked.empty(); ++i) {
    for (int p : child_pids(d.pid()))
      if (auto t = threads_in_d_state(p); !t.empty())
        blocked += " " + std::string(trim(read_file("/proc/" + std::to_string(p) + "/comm").value_or(""))) + ":" + t;
    if (blocked.empty()) DaemonProcess::sleep_ms(100);
  }
  std::printf("children blocked in the kernel:%s\n", blocked.c_str());
  EXPECT_NE(blocked.find("fsaudit-sampler"), std::string::npos) << "children in D state:" << blocked;
  const double lat1 = scrape_value(text, "fsaudit_fsync_latency_seconds_count", plain_lat);
  const double cap1 = scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}});
  DaemonProcess::sleep_ms(8000);
  text = d.scrape();
  ASSERT_FALSE(text.empty()) << "/metrics stopped answering while a sampler is stuck";
  text = d.wait_for([&](const std::string& s) {  // the sampler publishes every 5 s
    return value_or(s, "fsaudit_fsync_latency_seconds_count", plain_lat, 0) >= lat1 + 4;
  }, 15);
  EXPECT_EQ(scrape_value(text, "fsaudit_latency_sampler_state", hang_stuck), 1)
      << scrape_lines(text, "fsaudit_latency_sampler_state");
  EXPECT_GE(scrape_value(text, "fsaudit_fsync_latency_seconds_count", plain_lat), lat1 + 4)
      << scrape_lines(text, "fsaudit_fsync_latency_seconds_count") << d.log();
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", hang_cap))) << scrape_lines(text, "fsaudit_probe_success");
  EXPECT_GT(scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}}), cap1);
  EXPECT_EQ(value_or(text, "fsaudit_probe_stuck", {{"probe", "latency"}}, 0), 0) << scrape_lines(text, "fsaudit_probe_stuck");
  EXPECT_EQ(threads_in_d_state(d.pid()), "") << "a daemon thread is blocked in the kernel";
  {
    const fs::path scrape = dir / "scrape.txt";
    write_text(scrape, text);
    auto check = run({"sh", "-c", "promtool check metrics < " + scrape.string() + " 2>&1"});
    EXPECT_TRUE(check.ok()) << check.out;
  }
  sigterm_exits_then_helpers_end(d, hfs);
}

// Once the filesystem answers again the stuck job returns, is cleared, and runs again normally.
TEST_F(HangFsTest, ReleasedStatfsClearsStuckAndRunsAgain) {
  TempDir dir("fsaudit-fault-hang");
  const fs::path hang = dir / "hang";
  HangFs hfs(hang);
  ASSERT_TRUE(hfs.ok()) << "FUSE mount at " << hang << " did not appear";
  int port = free_port();
  DaemonProcess d(dir.path(), fast_config(port, dir / "state", {hang}, probes_), port);
  ReleaseFirst release_first{hfs};
  const std::map<std::string, std::string> hang_cap{{"probe", "capacity"}, {"target", hang.string()}};
  auto text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_probe_stuck", hang_cap) == 1; }, 30);
  ASSERT_EQ(scrape_value(text, "fsaudit_probe_stuck", hang_cap), 1) << scrape_lines(text, "fsaudit_probe_stuck");
  hfs.release();
  text = d.wait_for([&](const std::string& s) {
    return value_or(s, "fsaudit_probe_stuck", hang_cap, 0) == 0 && value_or(s, "fsaudit_probe_success", hang_cap, 1) == 1 &&
           scrape_value(s, "fsaudit_filesystem_size_bytes", {{"target", hang.string()}}) > 0;
  }, 15);
  EXPECT_EQ(value_or(text, "fsaudit_probe_stuck", hang_cap, 0), 0) << scrape_lines(text, "fsaudit_probe");
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", hang_cap))) << scrape_lines(text, "fsaudit_probe");
  EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", hang.string()}}), 4096.0 * 1024)
      << scrape_lines(text, "fsaudit_filesystem_size_bytes");
  EXPECT_EQ(d.stop(5), 0) << d.log();
}

// The capacity probe's batched statfs (StatfsHelpers::prefetch) on a cycle with a hung mount: the batch
// waits only its bound, keeps the answers that came before the hung path, and leaves its helper to that
// path's own call, which waits on it (no second helper on the hung mount; stuck, as without the batch)
// until cancelled; the paths after it ask on their own. The helper stays blocked in the kernel, so a
// later call on that path fails at once and says so.
TEST_F(HangFsTest, BatchedStatfsLeavesTheHungPathToItsOwnCall) {
  TempDir dir("fsaudit-fault-prefetch");
  const fs::path hang = dir / "hang";
  capacity::StatfsHelpers helpers;  // declared first: destroyed after the FUSE program has let go
  HangFs hfs(hang);
  ASSERT_TRUE(hfs.ok()) << "FUSE mount at " << hang << " did not appear";
  SystemClock clock;
  std::stop_source never;
  const std::vector<std::string> paths{"/", hang.string(), "/proc"};
  auto t0 = Clock::now();
  helpers.prefetch(paths, never.get_token(), clock, clock.now() + std::chrono::milliseconds(300));
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_EQ(helpers.request_writes(), 1u);
  struct statvfs st {};
  auto r = helpers.statvfs("/", &st, never.get_token(), clock, clock.now() + std::chrono::seconds(5));
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(helpers.request_writes(), 1u) << "the path before the hung one was answered by the batch";
  r = helpers.statvfs("/proc", &st, never.get_token(), clock, clock.now() + std::chrono::seconds(5));
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(helpers.request_writes(), 2u) << "the path after the hung one asks on its own";
  EXPECT_EQ(helpers.processes(), 2u) << "the batch's helper, held by the hung path, and the one that answered /proc";
  std::stop_source cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.request_stop();
  });
  t0 = Clock::now();
  r = helpers.statvfs(hang.string(), &st, cancel.get_token(), clock, clock.now() + std::chrono::seconds(5));
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("cancelled while statvfs was running"), std::string::npos) << r.error();
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(450));
  EXPECT_EQ(helpers.request_writes(), 2u) << "the hung path's call asked a new helper instead of the batch's";
  EXPECT_EQ(helpers.processes(), 2u);
  r = helpers.statvfs(hang.string(), &st, never.get_token(), clock, clock.now() + std::chrono::seconds(5));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("still blocked in the kernel"), std::string::npos) << r.error();
  EXPECT_EQ(helpers.processes(), 2u);
}

// A loop device this test attached; detached on scope exit unless the test detached it itself (after
// which the number may already belong to someone else's device, so it is never touched again).
class OwnLoop {
 public:
  explicit OwnLoop(const fs::path& file) {
    auto c = run({"losetup", "-f", "--show", file.string()});
    if (c.ok()) device_ = std::string(trim(c.out));
  }
  ~OwnLoop() {
    if (!device_.empty() && !detached_) run({"losetup", "-d", device_});
  }
  bool detach() {
    detached_ = run({"losetup", "-d", device_}).ok();
    return detached_;
  }
  const std::string& device() const { return device_; }

 private:
  std::string device_;
  bool detached_ = false;
};

// The disk under a mounted ext4 goes away: the loop device is detached (lazily, it stays while mounted)
// and its backing store starts failing every I/O. The daemon reports the kernel's I/O and ext4 errors
// on that device and the read-only remount, keeps running and stops cleanly.
TEST_F(HangFsTest, LoopDetachedAndDiskFailsUnderMountedExt4) {
  TempDir dir("fsaudit-fault-loop");
  const fs::path backing = dir / "backing.img", mnt = dir / "mnt";
  {
    std::ofstream(backing).close();
  }
  fs::resize_file(backing, 32 << 20);
  HangFs disk(dir / "fuse", backing);
  ASSERT_TRUE(disk.ok()) << "FUSE mount did not appear";
  OwnLoop loop(dir / "fuse" / "disk.img");
  ASSERT_FALSE(loop.device().empty());
  must({"mkfs.ext4", "-q", "-F", loop.device()});
  Mount m(loop.device(), mnt, "ext4", "errors=remount-ro");
  ASSERT_TRUE(m.ok()) << m.error();
  write_text(mnt / "before", "written while the disk was healthy\n");
  must({"sync", "-f", (mnt / "before").string()});
  int port = free_port();
  DaemonProcess d(dir.path(), fast_config(port, dir / "state", {mnt},
                                          "  capacity: {interval: 1s, jitter: 0s}\n  mount: {interval: 1s, jitter: 0s}\n"
                                          "  ext4: {interval: 1s, jitter: 0s}\n  kernel_log: {interval: 1s, jitter: 0s}\n",
                                          "kernel_log:\n  source: kmsg\n  max_lines_per_run: 100000\n"),
                  port);
  const std::map<std::string, std::string> t{{"target", mnt.string()}};
  auto text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_filesystem_readonly", t) == 0 &&
           !std::isnan(scrape_value(s, "fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}));
  }, 30);
  ASSERT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 0) << d.log();
  const std::string dev = fs::path(loop.device()).filename();
  ASSERT_TRUE(loop.detach());
  disk.fail();
  {
    std::ofstream f(mnt / "after");
    f << std::string(256 << 10, 'x');
  }
  run({"sync", "-f", (mnt / "after").string()}, 30);  // fails: EIO
  // The kernel's own read-only after the error is not announced as a mount table change; its error
  // report is, and makes the daemon read the table again.
  text = d.wait_for([&](const std::string& s) {
    return scrape_value(s, "fsaudit_filesystem_readonly", t) == 1 &&
           value_or(s, "fsaudit_kernel_errors_total", {{"device", dev}, {"kind", "io"}}, 0) >= 1;
  }, 30);
  EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_readonly", t), 1) << scrape_lines(text, "fsaudit_filesystem");
  EXPECT_GE(value_or(text, "fsaudit_kernel_errors_total", {{"device", dev}, {"kind", "io"}}, 0), 1)
      << scrape_lines(text, "fsaudit_kernel_errors_total");
  EXPECT_GE(value_or(text, "fsaudit_kernel_errors_total", {{"device", dev}, {"fs", "ext4"}}, 0), 1)
      << scrape_lines(text, "fsaudit_kernel_errors_total");
  EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", t), 0) << "statfs of the read-only fs still works";
  EXPECT_TRUE(d.running()) << d.log();
  EXPECT_EQ(d.stop(5), 0) << d.log();
}

}  // namespace
}  // namespace fsaudit::testing

// ---- journald restarted, rotated and vacuumed under the kernel log watcher; an invalid saved cursor ----
namespace fsaudit::kernel_log {
namespace {

namespace fs = std::filesystem;

using testing::write_kmsg;

// A private journald namespace reading /dev/kmsg (as in tests/kernel_log/lab_test.cpp), restartable.
using testing::PrivateJournald;

using Harness = testing::HostProbeHarness;

double errors(const ProbeResult& r, const std::string& dev) {
  double v = r.metrics.value("fsaudit_kernel_errors_total", {{"device", dev}, {"kind", "io"}});
  return std::isnan(v) ? 0 : v;
}

std::string io_line(const std::string& dev, int sector) {
  return "<3>I/O error, dev " + dev + ", sector " + std::to_string(sector) + " op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2\n";
}

TEST(JournaldFaults, RestartRotateVacuumAndInvalidCursor) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  if (!fs::exists("/lib/systemd/systemd-journald")) GTEST_SKIP() << "systemd-journald not installed";
  PrivateJournald jd("fsaudit-flt-");
  ASSERT_TRUE(jd.ok()) << "private journald did not create " << jd.journal_dir();
  testing::TempDir dir("fsaudit-fault-journal");
  Harness h(dir / "state");
  config::KernelLogConfig cfg;
  cfg.journal_directory = jd.journal_dir().string();
  const std::string dev = testing::unique_name("fsauditG");
  int emitted = 0;
  auto emit = [&] { write_kmsg(io_line(dev, 1000 + emitted++)); };
  auto until_all = [&](const ProbeResult& r) { return errors(r, dev) >= emitted; };
  {
    KernelLogProbe p(cfg);
    ASSERT_EQ(h.run(p).outcome, Outcome::ok);
    emit();
    auto r = h.run_until(p, until_all);
    ASSERT_EQ(errors(r, dev), 1) << r.reason;
    // journald restarted under the watcher: it opens a new file, the reader follows.
    jd.stop();
    jd.start();
    ASSERT_TRUE(jd.ok());
    emit();
    r = h.run_until(p, until_all);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, dev), 2) << "line after the journald restart";
    // Rotated under the reader, read, rotated again and the archived files (the one being read
    // included) vacuumed. (An entry vacuumed before any run read it is gone with its file.)
    testing::must({"journalctl", "--namespace=" + jd.ns(), "--rotate"});
    emit();
    r = h.run_until(p, until_all);
    EXPECT_EQ(errors(r, dev), emitted) << "line after a rotation";
    testing::must({"journalctl", "--namespace=" + jd.ns(), "--rotate"});
    testing::must({"journalctl", "--namespace=" + jd.ns(), "--vacuum-files=1"});
    emit();
    r = h.run_until(p, until_all);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, dev), emitted) << "lines across rotate + vacuum (files now " << jd.files() << ")";
    r = h.run(p);
    EXPECT_EQ(errors(r, dev), emitted) << "no double count";
  }
  {
    // A restart of the watcher after the vacuum: resumes at its cursor, nothing counted twice.
    KernelLogProbe p(cfg);
    emit();
    auto r = h.run_until(p, until_all);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, dev), emitted);
  }
  // A saved cursor the journal rejects: the watcher continues at the tail and counts the gap; it does
  // not fail until someone deletes the state file.
  auto state = dir / "state" / "kernel_log.state.json";
  auto text = read_file(state);
  ASSERT_TRUE(text);
  auto j = nlohmann::json::parse(*text);
  j["journal_cursor"] = "this is not a journal cursor";
  ASSERT_TRUE(write_file_atomic(state, j.dump()));
  {
    KernelLogProbe p(cfg);
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_kernel_log_gaps_total", {{"source", "journal"}}), 1);
    EXPECT_EQ(errors(r, dev), emitted) << "counters kept across the gap";
    emit();
    r = h.run_until(p, until_all);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(errors(r, dev), emitted);
  }
  {
    KernelLogProbe p(cfg);  // the fixed cursor was saved: a restart is not another gap
    auto r = h.run(p);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(r.metrics.value("fsaudit_kernel_log_gaps_total", {{"source", "journal"}}), 1);
    EXPECT_EQ(errors(r, dev), emitted);
  }
}

}  // namespace
}  // namespace fsaudit::kernel_log

// ---- restart storm ----
namespace fsaudit::testing {
namespace {

// SIGKILL-and-restart cycles of the real daemon while kernel I/O error lines keep arriving on /dev/kmsg:
// after the storm the counter equals the number of lines written, exactly (none counted twice, none
// missed): counts and the kmsg position are saved together, atomically, and the very first start saves
// its start position before counting anything.
TEST(RestartStorm, HundredSigkillRestartsCountEveryKernelLineOnce) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  TempDir dir("fsaudit-fault-storm");
  int port = free_port();
  const std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                           "\ntargets:\n  discover: false\nprobes:\n  kernel_log: {interval: 100ms, jitter: 0s}\n"
                           "kernel_log:\n  source: kmsg\n  max_lines_per_run: 100000\n";
  const std::string dev = unique_name("fsauditS");
  const std::map<std::string, std::string> want{{"device", dev}, {"kind", "io"}};
  std::atomic<int> emitted{0};
  auto emit = [&] {
    std::string line = "<3>I/O error, dev " + dev + ", sector " + std::to_string(emitted.load()) +
                       " op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2\n";
    int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    if (fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) ++emitted;
    if (fd >= 0) ::close(fd);
  };
  {
    // The very first start (no state file) begins at the current end of the buffer. It runs the
    // watcher once (a one-hour interval: no second run), lines arrive, and it is killed before any
    // run could count them: the restart must resume at that first start position, not at a new end.
    std::string once = yaml;
    once.replace(once.find("interval: 100ms"), 15, "interval: 1h");
    DaemonProcess first(dir.path(), once, port);
    auto text = first.wait_for_metric("fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}, 60);
    ASSERT_EQ(scrape_value(text, "fsaudit_kernel_log_lines_total", {{"source", "kmsg"}}), 0) << first.log();
    for (int i = 0; i < 5; ++i) emit();
    first.signal(SIGKILL);
    ASSERT_TRUE(fs::exists(dir / "state" / "kernel_log.state.json")) << "first start saved no position";
  }
  // The storm's daemons may be killed before any of them reads a line (an ASan build under load
  // starts slowly), so every line must still be in the kernel's ring when the last daemon starts:
  // lines beyond the ring's capacity would be overwritten, and counted as lost, by the kernel. The
  // storm writes at most a quarter of the ring (a record is its text plus about 16 bytes).
  const int ring_bytes = ::klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  ASSERT_GT(ring_bytes, 0) << "klogctl(SYSLOG_ACTION_SIZE_BUFFER): " << std::strerror(errno);
  const int line_bytes = 120 + static_cast<int>(dev.size());
  const int max_lines = ring_bytes / 4 / line_bytes;
  ASSERT_GT(max_lines, 150) << "a kernel log ring of " << ring_bytes << " bytes is too small for this test";
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop && emitted.load() < max_lines) {
      emit();
      DaemonProcess::sleep_ms(120);  // spread over the storm's ~35 s
    }
  });
  std::mt19937 rng(std::random_device{}());
  const int cycles = 100;
  int died_early = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < cycles; ++i) {
    DaemonProcess d(dir.path(), yaml, port);
    DaemonProcess::sleep_ms(100 + static_cast<int>(rng() % 400));
    if (!d.running()) ++died_early;
    d.signal(SIGKILL);
  }
  stop = true;
  writer.join();
  double storm_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(died_early, 0);
  // What the storm's daemons had counted and saved before the last one starts (printed: it tells a
  // failure where the storm's daemons never read apart from one where they counted twice).
  std::uint64_t counted_by_storm = 0;
  if (auto saved = read_file(dir / "state" / "kernel_log.state.json"))
    if (auto st = kernel_log::WatcherState::from_json(*saved))
      for (const auto& [k, count] : st->errors)
        if (std::get<0>(k) == dev) counted_by_storm += count;
  DaemonProcess d(dir.path(), yaml, port);
  // Up to 120 s: the last daemon reads back every line the storm wrote, which under ASan with the
  // fuzzers on the other core took longer than 60 s once (38 s alone).
  auto text = d.wait_for([&](const std::string& s) { return scrape_value(s, "fsaudit_kernel_errors_total", want) >= emitted; }, 120);
  DaemonProcess::sleep_ms(1000);  // more runs: nothing more may be counted
  text = d.scrape();
  std::printf("restart storm: %d SIGKILL cycles in %.1f s, %d lines written (at most %d: a %d-byte ring), %llu counted "
              "during the storm, counted %.0f, lost_messages %.0f\n",
              cycles, storm_s, emitted.load(), max_lines, ring_bytes, static_cast<unsigned long long>(counted_by_storm), scrape_value(text, "fsaudit_kernel_errors_total", want),
              scrape_value(text, "fsaudit_kernel_log_lost_messages_total", {{"source", "kmsg"}}));
  EXPECT_GT(emitted.load(), 100);
  EXPECT_EQ(scrape_value(text, "fsaudit_kernel_errors_total", want), emitted.load())
      << scrape_lines(text, "fsaudit_kernel_errors_total") << d.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_kernel_log_lost_messages_total", {{"source", "kmsg"}}), 0);
  EXPECT_EQ(d.stop(10), 0);
}

}  // namespace
}  // namespace fsaudit::testing
