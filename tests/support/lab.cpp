#include "tests/support/lab.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "daemon/core/strings.hpp"

namespace fsaudit::testing {

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

LoopDevice::LoopDevice(const std::filesystem::path& dir, const std::string& name, std::uint64_t size_bytes)
    : file_(dir / name) {
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(file_, std::ios::binary | std::ios::trunc);
  }
  std::filesystem::resize_file(file_, size_bytes);
  auto c = run({"losetup", "-f", "--show", file_.string()});
  if (c.ok()) device_ = std::string(trim(c.out));
  else ADD_FAILURE() << "losetup -f --show " << file_ << " failed: " << c.err;
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

void Mount::unmount() {
  if (!ok_) return;
  for (int i = 0; i < 30; ++i) {
    if (run({"umount", dir_.string()}).ok()) {
      ok_ = false;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  run({"umount", "-l", dir_.string()});
  ok_ = false;
}

Mount::~Mount() { unmount(); }

namespace {
bool zpool_answers() { return run({"zpool", "list", "-H"}, 10).ok(); }
}  // namespace

ZfsFuse::ZfsFuse() {
  // One zfs-fuse per machine: every lab test that needs it serialises on this lock.
  lock_fd_ = ::open("/run/fsaudit-lab-zfs-fuse.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX) != 0) {
    error_ = "cannot take /run/fsaudit-lab-zfs-fuse.lock";
    return;
  }
  if (zpool_answers()) {
    ok_ = true;  // already running (someone else's): use it, leave it running
    return;
  }
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
  for (int i = 0; i < 100; ++i) {
    if (zpool_answers()) {
      ok_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  error_ = "zfs-fuse did not come up within 10 s (see /tmp/fsaudit-lab-zfs-fuse.log)";
}

ZfsFuse::~ZfsFuse() {
  if (pid_ > 0) {
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
  }
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
