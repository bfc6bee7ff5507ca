#include "probes/canary/lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/canary/identity.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;

std::string boot_id(const HostPaths& host) {
  auto t = read_file(host.proc("sys/kernel/random/boot_id"), 256);
  return t ? std::string(trim(*t)) : std::string();
}

CanaryLock& CanaryLock::operator=(CanaryLock&& o) noexcept {
  if (this != &o) {
    for (int fd : fds_) ::close(fd);
    fds_ = std::move(o.fds_);
    o.fds_.clear();
  }
  return *this;
}

CanaryLock::~CanaryLock() {
  for (int fd : fds_) ::close(fd);
}

Result<CanaryLock> CanaryLock::acquire(const fs::path& state_dir, const config::CanaryTarget& t, const HostPaths& host) {
  CanaryLock lock;
  auto dir = canary_state_dir(state_dir, t.name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return err("cannot create " + dir.string() + ": " + ec.message());
  fs::path lf = dir / "lock";
  int fd = ::open(lf.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return err("cannot open the canary lock " + lf.string() + ": " + std::strerror(errno));
  // The lock is truncated and rewritten below: only a plain file of ours with no other name, so a
  // hard link planted at the lock's path cannot make us truncate someone else's file.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
    ::close(fd);
    return err("refusing the canary lock " + lf.string() + ": not a plain file of ours with a single link");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char buf[256] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string who = n > 0 ? std::string(trim(std::string_view(buf, static_cast<std::size_t>(n)))) : "";
    if (e == EWOULDBLOCK)
      return err("canary " + t.name + " is busy: another cycle holds " + lf.string() + (who.empty() ? "" : " (" + who + ")"));
    return err("cannot lock " + lf.string() + ": " + std::strerror(e));
  }
  lock.fds_.push_back(fd);
  std::string me = "pid " + std::to_string(::getpid()) + " boot " + boot_id(host) + " since " +
                   std::to_string(static_cast<long long>(std::time(nullptr))) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  // The member devices too: a second fsaudit with another state dir (or an older one) still collides.
  for (const auto& d : t.devices) {
    auto res = fs::canonical(d, ec);
    if (ec) continue;  // a missing device is the safety gate's to report
    int dfd = ::open(res.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (dfd < 0) continue;
    if (::flock(dfd, LOCK_EX | LOCK_NB) != 0) {
      ::close(dfd);
      return err("canary " + t.name + " is busy: device " + res.string() + " is locked by another canary cycle");
    }
    lock.fds_.push_back(dfd);
  }
  return lock;
}

}  // namespace fsaudit::canary
