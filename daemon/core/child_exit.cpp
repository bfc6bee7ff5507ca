#include "daemon/core/child_exit.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace fsaudit {

bool await_exit(pid_t pid, std::chrono::milliseconds limit) {
  auto exited = [pid] {
    siginfo_t info{};
    // WNOWAIT: looked at, left for the pool's reap; si_pid stays 0 while the child still runs.
    int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    return (r == 0 && info.si_pid == pid) || (r < 0 && errno == ECHILD);
  };
  if (exited()) return true;
#ifdef SYS_pidfd_open
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  const int fd = -1;
#endif
  if (fd >= 0) {
    // Readable once the process has exited: one wake-up, no polling.
    pollfd p{fd, POLLIN, 0};
    int r;
    do r = ::poll(&p, 1, static_cast<int>(limit.count()));
    while (r < 0 && errno == EINTR);
    ::close(fd);
    return exited();
  }
  // No pidfd (a kernel before 5.3): look every millisecond.
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    ::usleep(1000);
    if (exited()) return true;
  }
  return false;
}

}  // namespace fsaudit
