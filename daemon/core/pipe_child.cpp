#include "daemon/core/pipe_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace fsaudit {

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

namespace {

[[noreturn]] void become_child(int request, int reply, const char* name, void (*child_main)()) {
  // Two descriptors above every one in use, then 3 and 4: nothing else stays open (an orphaned helper
  // must not keep the daemon's listening socket, so a restarted daemon can bind its port).
  int in = ::fcntl(request, F_DUPFD, 10), out = ::fcntl(reply, F_DUPFD, 10);
  if (in < 0 || out < 0 || ::dup2(in, 3) != 3 || ::dup2(out, 4) != 4) ::_exit(127);
  if (::close_range(5, ~0U, 0) != 0)
    for (int fd = 5; fd < 65536; ++fd) ::close(fd);
  ::prctl(PR_SET_NAME, name, 0, 0, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &dfl, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  child_main();
  ::_exit(0);
}

}  // namespace

Result<PipeChild> fork_pipe_child(const char* name, void (*child_main)()) {
  int req[2], rep[2];
  if (::pipe2(req, O_CLOEXEC) != 0) return err(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(rep, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(req[0]);
    ::close(req[1]);
    return err(std::string("pipe: ") + std::strerror(e));
  }
  pid_t pid = ::fork();
  if (pid == 0) become_child(req[0], rep[1], name, child_main);
  int e = errno;
  ::close(req[0]);
  ::close(rep[1]);
  if (pid < 0) {
    ::close(req[1]);
    ::close(rep[0]);
    return err(std::string("fork: ") + std::strerror(e));
  }
  return PipeChild{pid, req[1], rep[0]};
}

void close_pipe_child(const PipeChild& c, bool kill) {
  if (kill) ::kill(c.pid, SIGKILL);
  ::close(c.request);
  ::close(c.reply);
}

bool reaped(pid_t pid) {
  int st = 0;
  pid_t r = ::waitpid(pid, &st, WNOHANG);
  return r == pid || (r < 0 && errno == ECHILD);
}

}  // namespace fsaudit
