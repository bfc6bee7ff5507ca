// fsaudit-scrub-detach [--group GID] DIR -- COMMAND [ARGS...]
//
// Starts a long-running scrub command (btrfs scrub start -B, xfs_scrub, bcachefs scrub) detached
// from the caller, so the scrub probe, which runs it through the CommandRunner with a short timeout,
// returns at once while the scrub goes on for hours:
//   * a watcher process in its own session (setsid) runs COMMAND with stdin from /dev/null and
//     stdout+stderr into DIR/output, waits for it and writes DIR/status atomically:
//       exit=<code>\nsignal=<n>\nstart=<unix>\nend=<unix>\n
//   * DIR/pid holds the process group id (kill -TERM -- -PGID cancels the scrub; the watcher
//     ignores SIGTERM so it still records how the command ended);
//   * the watcher holds an exclusive flock on DIR/lock while it lives: a reader that cannot see
//     the watcher in /proc (fsauditd under ProtectProc=invisible, the job fsaudit-helper's, as root)
//     still tells a running job from one that vanished;
//   * DIR is made here (it must not exist: the caller removed the last job's) and every file in it
//     with O_EXCL, never through a symlink. DIR is 0700 and its files 0600 whatever the umask; with
//     --group (fsaudit-helper names the daemon's group), DIR is 0750 and its files 0640 of that group:
//     the unprivileged daemon reads the jobs the helper starts for it, nobody else can, and it can
//     write none of them.
//   * this process prints "pid=<pgid>" and exits 0 once the watcher is set up.
// It never uses a shell. Exit 2: usage; 1: could not set up.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

gid_t group = static_cast<gid_t>(-1);  // --group: the one group that may read the job

// A new file only: an existing one (planted, or left over) is an error, not something to reuse.
int open_file(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  bool ok = group == static_cast<gid_t>(-1) ? ::fchmod(fd, 0600) == 0
                                            : ::fchown(fd, static_cast<uid_t>(-1), group) == 0 && ::fchmod(fd, 0640) == 0;
  if (!ok) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool write_atomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());  // our own leftover (a watcher killed mid-write): DIR is ours alone
  int fd = open_file(tmp, O_WRONLY);
  if (fd < 0) return false;
  bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  return ok && ::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--group") == 0) {
    char* end = nullptr;
    errno = 0;
    unsigned long g = std::strtoul(argv[2], &end, 10);
    if (errno != 0 || !end || *end != '\0' || argv[2][0] == '\0' || argv[2][0] == '-' || g >= 0xffffffffUL) {
      std::fprintf(stderr, "fsaudit-scrub-detach: --group needs a numeric group id, not \"%s\"\n", argv[2]);
      return 2;
    }
    group = static_cast<gid_t>(g);
    argc -= 2;
    argv += 2;
  }
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: fsaudit-scrub-detach [--group GID] DIR -- COMMAND [ARGS...]\n");
    return 2;
  }
  std::string dir = argv[1];
  if (::mkdir(dir.c_str(), 0700) != 0) {
    std::fprintf(stderr, "cannot create %s: %s (it must not exist yet)\n", dir.c_str(), std::strerror(errno));
    return 1;
  }
  {
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bool ok = dfd >= 0 && (group == static_cast<gid_t>(-1)
                               ? ::fchmod(dfd, 0700) == 0
                               : ::fchown(dfd, static_cast<uid_t>(-1), group) == 0 && ::fchmod(dfd, 0750) == 0);
    if (!ok) {
      std::fprintf(stderr, "cannot use %s: %s\n", dir.c_str(), std::strerror(errno));
      return 1;
    }
    ::close(dfd);
  }
  int sync[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) {
    std::perror("pipe");
    return 1;
  }
  pid_t watcher = ::fork();
  if (watcher < 0) {
    std::perror("fork");
    return 1;
  }
  if (watcher > 0) {
    ::close(sync[1]);
    char c = 0;
    ssize_t n = ::read(sync[0], &c, 1);
    if (n != 1 || c != 'k') {
      std::fprintf(stderr, "watcher failed to start the command (see %s/output)\n", dir.c_str());
      return 1;
    }
    std::printf("pid=%d\n", static_cast<int>(watcher));
    return 0;
  }
  // Watcher: new session and process group; drop the caller's pipes.
  ::close(sync[0]);
  ::setsid();
  int devnull = ::open("/dev/null", O_RDWR);
  int out = open_file(dir + "/output", O_WRONLY | O_APPEND);
  int lock = open_file(dir + "/lock", O_RDONLY);
  if (devnull < 0 || out < 0 || lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    ssize_t ignored = ::write(sync[1], "e", 1);
    (void)ignored;
    _exit(1);
  }
  ::dup2(devnull, 0);
  ::dup2(devnull, 1);
  ::dup2(devnull, 2);
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  long start = static_cast<long>(::time(nullptr));
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execvp(argv[3], argv + 3);
    std::fprintf(stderr, "fsaudit-scrub-detach: cannot run %s: %s\n", argv[3], std::strerror(errno));
    _exit(127);
  }
  if (child < 0) {
    ssize_t ignored = ::write(sync[1], "e", 1);
    (void)ignored;
    _exit(1);
  }
  write_atomic(dir + "/pid", std::to_string(::getpid()) + "\n");
  ssize_t ignored = ::write(sync[1], "k", 1);
  (void)ignored;
  ::close(sync[1]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  write_atomic(dir + "/status", "exit=" + std::to_string(code) + "\nsignal=" + std::to_string(sig) +
                                    "\nstart=" + std::to_string(start) +
                                    "\nend=" + std::to_string(static_cast<long>(::time(nullptr))) + "\n");
  _exit(0);
}
