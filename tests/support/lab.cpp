#include "tests/support/lab.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "daemon/core/pipe_child.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::testing {

namespace {
// A lab test's mounts live in a mount namespace of its own, created before main() while the process
// is single-threaded; its children (mount, fsauditd under test, zfs-fuse started here) inherit it.
// Other processes on the machine never see them: a fsauditd under test elsewhere discovers every
// mounted filesystem, writes its latency probe file there and keeps it open, which made another
// test's umount fail (EBUSY) and its "remount to drop the cache" silently keep the cache.
// Not in a helper (this program exec'd again, which runs this initialiser again): it already lives in
// the test's namespace, and a namespace of its own would hold a copy of every mount the test had at
// that moment, so a canary the test then unmounts stays mounted there and its device busy (EBUSY on
// the canary cycle's O_EXCL open of the loop device).
const bool g_private_mounts = [] {
  if (fsaudit::started_as_helper()) return false;
  if (::geteuid() != 0 || ::unshare(CLONE_NEWNS) != 0) return false;
  // Nothing mounted here propagates back to the machine's namespace.
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0;
}();
}  // namespace

bool lab_mounts_private() { return g_private_mounts; }

bool lab_required() {
  const char* e = std::getenv("FSAUDIT_REQUIRE_LAB");
  return e && std::string(e) == "1";
}

std::optional<std::string> lab_unavailable() {
  if (::geteuid() != 0) return "needs root (loop devices, mount)";
  if (::access("/dev/loop-control", R_OK | W_OK) != 0) return "no /dev/loop-control";
  if (run({"losetup", "--version"}).exit_code != 0) return "losetup not installed (util-linux)";
  return std::nullopt;
}

std::optional<std::string> zfs_fuse_unavailable() {
  if (::access("/usr/sbin/zfs-fuse", X_OK) != 0 && ::access("/usr/bin/zfs-fuse", X_OK) != 0)
    return "zfs-fuse not installed (apt-get install zfs-fuse)";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "no /dev/fuse";
  return std::nullopt;
}

std::optional<std::string> lab_tool_missing(const std::string& tool, const std::string& package) {
  if (run({"sh", "-c", "PATH=\"$PATH:/usr/sbin:/sbin\"; command -v \"$0\" >/dev/null", tool}).ok()) return std::nullopt;
  return tool + " not installed (apt-get install " + package + ")";
}

std::optional<std::string> lab_path_missing(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return std::nullopt;
  return what + ": " + path.string() + " does not exist here";
}

LoopDevice::LoopDevice(const std::filesystem::path& dir, const std::string& name, std::uint64_t size_bytes)
    : file_(dir / name) {
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(file_, std::ios::binary | std::ios::trunc);
  }
  std::filesystem::resize_file(file_, size_bytes);
  // losetup can block for minutes while another process on the machine attaches or detaches
  // hundreds of loop devices (seen here: 800 at once); retry, and first detach whatever a killed
  // attempt left attached to our own backing file.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  Cmd c;
  for (int attempt = 1;; ++attempt) {
    c = run({"losetup", "-f", "--show", file_.string()}, 120);
    if (c.ok()) {
      device_ = std::string(trim(c.out));
      return;
    }
    const std::string attached = run({"losetup", "-j", file_.string()}, 120).out;  // lines() views into it
    for (auto line : lines(attached)) {
      auto dev = std::string(trim(line.substr(0, line.find(':'))));
      if (!dev.empty()) run({"losetup", "-d", dev}, 120);
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::fprintf(stderr, "[lab] losetup -f --show %s failed (attempt %d: %s), retrying\n", file_.c_str(), attempt,
                 c.err.c_str());
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  ADD_FAILURE() << "losetup -f --show " << file_ << " failed for 10 min: " << c.err;
}

LoopDevice::~LoopDevice() {
  if (device_.empty()) return;
  for (int i = 0; i < 50; ++i) {
    auto c = run({"losetup", "-d", device_});
    if (c.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Mount::Mount(const std::string& device, const std::filesystem::path& dir, const std::string& fstype,
             const std::string& options)
    : dir_(dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> argv = {"mount"};
  if (!fstype.empty()) argv.insert(argv.end(), {"-t", fstype});
  if (!options.empty()) argv.insert(argv.end(), {"-o", options});
  argv.push_back(device);
  argv.push_back(dir.string());
  auto c = run(argv);
  ok_ = c.ok();
  if (!ok_) error_ = c.err + c.out;
}

bool Mount::remount(const std::string& options) {
  return run({"mount", "-o", "remount," + options, dir_.string()}).ok();
}

namespace {
bool is_under(const std::string& link, const std::string& dir) {
  return link == dir || (link.size() > dir.size() && link.compare(0, dir.size(), dir) == 0 && link[dir.size()] == '/');
}

// Processes with their cwd, root or an open file on the mount at `dir` (this process aside). A lab
// mount lives in a test's own temporary directory, so these are the test's own children: a tool that
// hung (seen: `btrfs scrub start -B` on a futex after its scrub ended) and would keep the mount, and
// with it the loop devices, busy after the test.
std::vector<pid_t> processes_using(const std::filesystem::path& dir) {
  std::vector<pid_t> out;
  const std::string d = dir.string();
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::vector<std::filesystem::path> links = {it->path() / "cwd", it->path() / "root"};
    std::error_code fec;
    for (auto f = std::filesystem::directory_iterator(it->path() / "fd", fec); !fec && f != std::filesystem::directory_iterator();
         f.increment(fec))
      links.push_back(f->path());
    for (const auto& l : links) {
      std::error_code lec;
      auto target = std::filesystem::read_symlink(l, lec);
      if (!lec && is_under(target.string(), d)) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}
}  // namespace

void Mount::unmount() {
  if (!ok_) return;
  for (int i = 0; i < 30; ++i) {
    if (run({"umount", dir_.string()}).ok()) {
      ok_ = false;
      return;
    }
    if (i == 10) {
      for (pid_t pid : processes_using(dir_)) {
        std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
        std::string c;
        std::getline(comm, c);
        std::fprintf(stderr, "[lab] %s still busy after 2 s: killing pid %d (%s), which holds it\n", dir_.c_str(),
                     static_cast<int>(pid), c.c_str());
        ::kill(pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  run({"umount", "-l", dir_.string()});
  ok_ = false;
}

Mount::~Mount() { unmount(); }

namespace {
bool zpool_answers() { return run({"zpool", "list", "-H"}, 10).ok(); }

constexpr const char* kZfsFuseLock = "/run/fsaudit-lab-zfs-fuse.lock";

// Who holds the zfs-fuse lab lock: the processes with the lock file open that are not waiting for
// it (/proc/locks marks waiters with "->"; the pid it lists for the holder may be a `flock` helper
// long gone while a script's children keep the lock). "pid 123 (bash bench/x.sh ...)".
std::string lock_holders(int fd) {
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) return "unknown";
  char id[64];
  std::snprintf(id, sizeof id, ":%lu ", static_cast<unsigned long>(sb.st_ino));
  std::vector<std::string> waiters;
  {
    std::ifstream locks("/proc/locks");
    for (std::string line; std::getline(locks, line);) {
      if (line.find(id) == std::string::npos || line.find("->") == std::string::npos) continue;
      std::vector<std::string> w;
      for (auto x : split_ws(line)) w.emplace_back(x);
      if (w.size() >= 6) waiters.push_back(w[5]);  // "N: -> FLOCK ADVISORY WRITE PID ..."
    }
  }
  std::string out;
  int shown = 0;
  std::error_code ec;
  const std::string self = std::to_string(::getpid());
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    auto pid = it->path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0])) || pid == self) continue;
    if (std::find(waiters.begin(), waiters.end(), pid) != waiters.end()) continue;
    std::error_code ec2;
    bool has = false;
    for (auto f = std::filesystem::directory_iterator(it->path() / "fd", ec2);
         !ec2 && f != std::filesystem::directory_iterator(); f.increment(ec2)) {
      std::error_code ec3;
      if (std::filesystem::read_symlink(f->path(), ec3) == kZfsFuseLock) has = true;
    }
    if (!has) continue;
    std::ifstream c(it->path() / "cmdline");
    std::string cmd;
    for (std::string a; std::getline(c, a, '\0');) cmd += (cmd.empty() ? "" : " ") + a;
    if (++shown <= 3) out += (out.empty() ? "" : ", ") + std::string("pid ") + pid + " (" + cmd.substr(0, 100) + ")";
  }
  if (shown > 3) out += " and " + std::to_string(shown - 3) + " more";
  return out.empty() ? "unknown" : out;
}
}  // namespace

ZfsFuse::ZfsFuse() {
  // One zfs-fuse per machine: every lab user (tests of every checkout on this machine, the lab
  // canaries of a running fsauditd) serialises on this lock. Others may hold it for minutes; wait
  // (saying for whom) up to a bound that stays inside the lab tests' ctest timeout.
  lock_fd_ = ::open(kZfsFuseLock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    error_ = std::string("cannot open ") + kZfsFuseLock;
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto limit = std::chrono::seconds(kZfsFuseLockWaitSeconds);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    // Queue like every other user (a LOCK_NB poller loses each release to the blocked waiters): a
    // child blocks in flock() on our open file description, which then holds the lock for us; at
    // the bound the child is killed, which ends its wait.
    std::fprintf(stderr, "[lab] waiting for zfs-fuse, held by %s\n", lock_holders(lock_fd_).c_str());
    pid_t waiter = ::fork();
    if (waiter == 0) _exit(::flock(lock_fd_, LOCK_EX) == 0 ? 0 : 1);
    if (waiter < 0) {
      error_ = std::string("fork: ") + std::strerror(errno);
      return;
    }
    int status = 0;
    bool got = false, done = false;
    while (!done) {
      if (::waitpid(waiter, &status, WNOHANG) == waiter) {
        done = true;
        got = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      } else if (std::chrono::steady_clock::now() - start > limit) {
        ::kill(waiter, SIGKILL);
        ::waitpid(waiter, &status, 0);
        done = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
    if (!got) {
      error_ = std::string("zfs-fuse stayed in use by another lab user for ") + std::to_string(limit.count()) +
               " s (" + kZfsFuseLock + " held by " + lock_holders(lock_fd_) + ")";
      return;
    }
    std::fprintf(stderr, "[lab] zfs-fuse lock taken after %.0f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (zpool_answers()) {
    ok_ = true;  // already running (someone else's): use it, leave it running
    // Its dataset mounts land in its own mount namespace: say so when that is not ours.
    std::error_code ec;
    auto ours = std::filesystem::read_symlink("/proc/self/ns/mnt", ec);
    for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec)) {
      std::ifstream comm(it->path() / "comm");
      std::string name;
      if (!std::getline(comm, name) || name != "zfs-fuse") continue;
      std::error_code ec2;
      auto theirs = std::filesystem::read_symlink(it->path() / "ns/mnt", ec2);
      if (!ec2 && theirs != ours)
        std::fprintf(stderr, "[lab] using zfs-fuse pid %s from another mount namespace: its dataset mounts are not visible here\n",
                     it->path().filename().c_str());
    }
    return;
  }
  spawn();
}

void ZfsFuse::spawn() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    int fd = ::open("/tmp/fsaudit-lab-zfs-fuse.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execlp("zfs-fuse", "zfs-fuse", "--no-daemon", "--no-kstat-mount", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_ = pid;
  ok_ = false;
  // Under a loaded machine zfs-fuse can take well over 10 s to answer its first zpool command.
  for (int i = 0; i < 600; ++i) {
    if (zpool_answers()) {
      ok_ = true;
      return;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "zfs-fuse exited at start (see /tmp/fsaudit-lab-zfs-fuse.log)";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  error_ = "zfs-fuse did not come up within 60 s (see /tmp/fsaudit-lab-zfs-fuse.log)";
}

void ZfsFuse::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) gone = true;
    else std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!gone) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

bool ZfsFuse::restart(const std::function<void()>& while_down) {
  if (!owned()) {
    error_ = "restart: this zfs-fuse is not ours";
    return false;
  }
  stop();
  while_down();
  spawn();
  return ok_;
}

ZfsFuse::~ZfsFuse() {
  stop();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

ZfsPool::ZfsPool(const std::string& name, const std::vector<std::string>& create_args) : name_(name) {
  std::vector<std::string> argv = {"zpool", "create", "-f", name};
  argv.insert(argv.end(), create_args.begin(), create_args.end());
  auto c = run(argv, 60);
  ok_ = c.ok();
  if (!ok_) error_ = c.err + c.out;
}

ZfsPool::~ZfsPool() {
  if (!ok_) return;
  for (int i = 0; i < 20; ++i) {
    if (run({"zpool", "destroy", "-f", name_}, 60).ok()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::string digest_file(const std::filesystem::path& p) {
  // FNV-1a over the whole content, read directly (O_DIRECT not needed: we compare before/after).
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "unreadable:" + p.string();
  std::uint64_t h = 1469598103934665603ULL;
  std::vector<unsigned char> buf(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      h ^= buf[static_cast<size_t>(i)];
      h *= 1099511628211ULL;
    }
  }
  ::close(fd);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace fsaudit::testing
