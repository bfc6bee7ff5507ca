#include "daemon/core/pipe_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "daemon/core/child_exit.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

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

constexpr const char* kHelperFlag = "--fsaudit-helper";

// Filled by static initialisers before main(): a plain array, so no initialisation order to get wrong.
struct Helper {
  const char* name;
  void (*main)();
};
constexpr int kMaxHelpers = 8;
Helper g_helpers[kMaxHelpers];
int g_helper_count = 0;

const Helper* find_helper(std::string_view name) {
  for (int i = 0; i < g_helper_count; ++i)
    if (name == g_helpers[i].name) return &g_helpers[i];
  return nullptr;
}

std::atomic<bool> g_exec{false};
bool g_entered = false;  // helper_entry() ran: this program can be a helper
std::mutex g_mu;  // g_exe, g_failure
std::string g_exe = "/proc/self/exe";
std::string g_failure;

// Everything between fork and exec (or child_main) is a system call: another daemon thread may have
// held a lock (malloc's, a sanitizer's) at the fork, and only exec leaves it behind.
[[noreturn]] void become_child(int request, int reply, int exec_error, const char* name, const char* exe,
                               char* const* argv, void (*child_main)()) {
  // Above every descriptor in use, then 3, 4 (and 5, closed by a successful exec): nothing else stays
  // open (an orphaned helper must not keep the daemon's listening socket, so a restarted daemon can
  // bind its port).
  int in = ::fcntl(request, F_DUPFD, 10), out = ::fcntl(reply, F_DUPFD, 10);
  int err = exe ? ::fcntl(exec_error, F_DUPFD, 10) : -1;
  if (in < 0 || out < 0 || ::dup2(in, 3) != 3 || ::dup2(out, 4) != 4) ::_exit(127);
  if (exe && (err < 0 || ::dup3(err, 5, O_CLOEXEC) != 5)) ::_exit(127);
  // Standard input, output and error on /dev/null: a helper stuck in the kernel (a hung mount) must
  // not hold the daemon's output open, or `fsauditd --once | ...` and whatever reads the daemon's
  // pipes would wait for it after the daemon has gone.
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    for (int fd = 0; fd <= 2; ++fd)
      if (fd != null_fd) ::dup2(null_fd, fd);
    if (null_fd <= 2) ::fcntl(null_fd, F_SETFD, 0);
  }
  const unsigned first_closed = exe ? 6 : 5;
  if (::close_range(first_closed, ~0U, 0) != 0)
    for (int fd = static_cast<int>(first_closed); fd < 65536; ++fd) ::close(fd);
  // The system call itself, not libc's prctl(): a sanitizer's prctl interceptor takes its thread
  // registry's lock to record the name, and another thread may have held it at the fork (seen under
  // ASan: the helper waited on that lock forever).
  ::syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &dfl, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, nullptr);  // kept across exec
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (exe) {
    ::execv(exe, argv);
    int e = errno;
    (void)!::write(5, &e, sizeof e);
    ::_exit(127);
  }
  child_main();
  ::_exit(0);
}

void close_pair(int p[2]) {
  if (p[0] >= 0) ::close(p[0]);
  if (p[1] >= 0) ::close(p[1]);
}

// With `exec_failure`, exec's the helper; a failed exec is reported there (and as the error).
Result<PipeChild> start(const char* name, void (*child_main)(), std::string* exec_failure) {
  const bool exec = exec_failure != nullptr;
  std::string exe;
  if (exec) {
    std::lock_guard l(g_mu);
    exe = g_exe;
  }
  int req[2] = {-1, -1}, rep[2] = {-1, -1}, xe[2] = {-1, -1};
  if (::pipe2(req, O_CLOEXEC) != 0 || ::pipe2(rep, O_CLOEXEC) != 0 || (exec && ::pipe2(xe, O_CLOEXEC) != 0)) {
    int e = errno;
    close_pair(req);
    close_pair(rep);
    close_pair(xe);
    return err(std::string("pipe: ") + std::strerror(e));
  }
  std::string arg0 = name, flag = kHelperFlag, arg2 = name;
  char* argv[] = {arg0.data(), flag.data(), arg2.data(), nullptr};
  pid_t pid = ::fork();
  if (pid == 0) become_child(req[0], rep[1], xe[1], name, exec ? exe.c_str() : nullptr, argv, child_main);
  int e = errno;
  ::close(req[0]);
  ::close(rep[1]);
  if (xe[1] >= 0) ::close(xe[1]);
  if (pid < 0) {
    ::close(req[1]);
    ::close(rep[0]);
    if (xe[0] >= 0) ::close(xe[0]);
    return err(std::string("fork: ") + std::strerror(e));
  }
  if (exec) {
    // EOF: the exec worked (the descriptor closed with it); an errno: it did not, and the child ended.
    int exec_errno = 0;
    ssize_t n;
    do n = ::read(xe[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    ::close(xe[0]);
    if (n != 0) {
      ::close(req[1]);
      ::close(rep[0]);
      int st = 0;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      *exec_failure = "exec of " + exe + ": " +
                      (n == static_cast<ssize_t>(sizeof exec_errno) ? std::strerror(exec_errno) : "no answer");
      return err(*exec_failure);
    }
  }
  return PipeChild{pid, req[1], rep[0]};
}

}  // namespace

HelperRegistration::HelperRegistration(const char* name, void (*child_main)()) {
  if (find_helper(name)) return;
  if (g_helper_count >= kMaxHelpers) {
    std::fprintf(stderr, "fsaudit: more than %d helper kinds registered; '%s' forks without exec\n", kMaxHelpers,
                 name);
    return;
  }
  g_helpers[g_helper_count++] = {name, child_main};
}

void helper_entry(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == kHelperFlag) {
    const Helper* h = argc == 3 ? find_helper(argv[2]) : nullptr;
    struct stat in {}, out {};
    if (!h || ::fstat(3, &in) != 0 || ::fstat(4, &out) != 0 || !S_ISFIFO(in.st_mode) || !S_ISFIFO(out.st_mode)) {
      std::fprintf(stderr, "%s: %s is started by fsauditd itself, with its pipes on fds 3 and 4\n", argv[0],
                   kHelperFlag);
      ::_exit(2);
    }
    ::prctl(PR_SET_NAME, h->name, 0, 0, 0);  // an exec named it after the file, "exe"
    h->main();
    ::_exit(0);
  }
  std::lock_guard l(g_mu);
  g_entered = true;
  g_exec = !g_exe.empty();
}

bool started_as_helper() {
  auto cmdline = read_file("/proc/self/cmdline");  // argv, each argument NUL-terminated
  if (!cmdline) return false;
  auto args = split(*cmdline, '\0');
  return args.size() >= 2 && args[1] == kHelperFlag;
}

void set_helper_executable(std::optional<std::string> path) {
  std::lock_guard l(g_mu);
  g_exe = path.value_or("/proc/self/exe");
  g_failure.clear();
  g_exec = g_entered && !g_exe.empty();
}

bool helpers_exec() { return g_exec; }

std::string helper_exec_failure() {
  std::lock_guard l(g_mu);
  return g_failure;
}

Result<PipeChild> start_pipe_child(const char* name, void (*child_main)()) {
  const Helper* h = find_helper(name);
  if (g_exec && h && h->main == child_main) {
    std::string exec_failure;
    auto made = start(name, child_main, &exec_failure);
    if (made || exec_failure.empty()) return made;
    // Exec does not work here (no /proc, a sandbox): fork from now on, and say why once.
    std::lock_guard l(g_mu);
    g_failure = std::move(exec_failure);
    g_exec = false;
  }
  return start(name, child_main, nullptr);
}

std::optional<PipeChild> IdleChildren::take() {
  if (idle_.empty()) return std::nullopt;
  PipeChild c = idle_.back().child;
  idle_.pop_back();
  return c;
}

void IdleChildren::put(const PipeChild& c, Time now, std::vector<pid_t>& ended) {
  idle_.push_back({c, now});
  while (idle_.size() > max_idle_ || (idle_.size() > 1 && now - idle_.front().since > max_unused_)) {
    close_pipe_child(idle_.front().child, false);
    ended.push_back(idle_.front().child.pid);
    idle_.pop_front();
  }
}

std::vector<pid_t> IdleChildren::end_all() {
  std::vector<pid_t> ended;
  for (const auto& i : idle_) {
    close_pipe_child(i.child, false);
    ended.push_back(i.child.pid);
  }
  idle_.clear();
  return ended;
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

void await_ended(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) await_exit(pid, std::chrono::milliseconds(50));
}

}  // namespace fsaudit
