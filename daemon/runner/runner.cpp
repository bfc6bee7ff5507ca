#include "daemon/runner/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "daemon/core/child_exit.hpp"
#include "daemon/core/result.hpp"
#include "daemon/core/trust.hpp"

extern char** environ;

namespace fsaudit {
namespace {

std::string first_line(const std::string& s) {
  auto p = s.find('\n');
  std::string l = s.substr(0, p);
  while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
  if (l.size() > 300) l = l.substr(0, 300) + "...";
  return l;
}

// A path is run as given (a missing or non-executable one is the spawn's error, with its errno).
std::string resolve(const std::string& name) { return name.find('/') != std::string::npos ? name : find_tool(name); }

class KeyGuard {
 public:
  KeyGuard(std::mutex& mu, std::set<std::string>& running, std::string key)
      : mu_(mu), running_(running), key_(std::move(key)) {
    std::lock_guard l(mu_);
    acquired_ = running_.insert(key_).second;
  }
  ~KeyGuard() {
    if (!acquired_) return;
    std::lock_guard l(mu_);
    running_.erase(key_);
  }
  bool acquired() const { return acquired_; }

 private:
  std::mutex& mu_;
  std::set<std::string>& running_;
  std::string key_;
  bool acquired_ = false;
};

}  // namespace

std::string CommandResult::describe() const {
  if (busy) return "previous run of the same command is still running";
  if (!spawn_error.empty()) return spawn_error;
  if (timed_out) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", duration_seconds);
    return std::string("timed out after ") + secs + "s (killed)";
  }
  if (term_signal) return std::string("killed by signal ") + strsignal(term_signal);
  if (exited && exit_code == 0 && !truncated) return "ok";
  if (truncated && exited && exit_code == 0)
    return "output cut short: more than the runner keeps (" + std::to_string(out.size()) + " bytes kept)";
  std::string msg = "exit " + std::to_string(exit_code);
  std::string line = first_line(err.empty() ? out : err);
  if (!line.empty()) msg += ": " + line;
  if (truncated) msg += " (output cut short)";
  return msg;
}

namespace {

// The executable `spec` names, if it exists and (for root) only root can change it; else why not.
Result<std::string> runnable_executable(const CommandSpec& spec) {
  std::string exe = resolve(spec.argv[0]);
  if (exe.empty() || ::access(exe.c_str(), X_OK) != 0)
    return err(spec.argv[0] + ": not found (is the package installed and in PATH?)", ErrorKind::not_installed);
  // Root runs only what root alone can change (tools: in a config, PATH): a zpool another user can
  // rewrite would be that user's code running as root.
  if (::geteuid() == 0) {
    if (auto trusted = check_trusted_executable(exe, 0); !trusted)
      return err_in("refusing to run " + exe + " as root: ", trusted);
  }
  return exe;
}

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;  // read ends of its stdout and stderr
};

// Starts `exe` in its own process group with a C locale, stdout/stderr on pipes and stdin from
// spec.stdin_data (or /dev/null).
Result<Child> spawn_child(const std::string& exe, const CommandSpec& spec) {
  int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return err(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    auto e = errno;
    ::close(out_pipe[0]); ::close(out_pipe[1]);
    return err(std::string("pipe: ") + std::strerror(e));
  }
  bool with_stdin = spec.stdin_data.has_value();
  if (with_stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0) with_stdin = false;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (with_stdin) posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  else posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so the whole tree dies at the deadline; default signal handling in the child.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> envs = {"LC_ALL=C", "LANG=C"};
  envs.push_back("PATH=" + tool_search_path());
  for (const auto& [k, v] : spec.env) envs.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (with_stdin) ::close(in_pipe[0]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (with_stdin) ::close(in_pipe[1]);
    return err(spec.argv[0] + ": cannot start: " + std::strerror(rc));
  }
  if (with_stdin) {
    // Small inputs only; a child that does not read them must not block us.
    ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
    ssize_t ignored = ::write(in_pipe[1], spec.stdin_data->data(), spec.stdin_data->size());
    (void)ignored;
    ::close(in_pipe[1]);
  }
  return Child{pid, out_pipe[0], err_pipe[0]};
}

// Kills the child's process group at the deadline or on a stop request, saying which in `r`.
// True when it killed.
bool kill_if_due(const Child& c, std::chrono::steady_clock::time_point deadline, std::stop_token stop, CommandResult& r) {
  auto now = std::chrono::steady_clock::now();
  if (now < deadline && !stop.stop_requested()) return false;
  ::kill(-c.pid, SIGKILL);
  r.timed_out = now >= deadline;
  if (!r.timed_out) r.spawn_error = "cancelled (daemon stopping)";
  return true;
}

// Reads stdout and stderr (at most spec.max_output each, `truncated` beyond) until both close or
// the child is killed. True when it killed the child.
bool read_output(const Child& c, const CommandSpec& spec, std::chrono::steady_clock::time_point deadline,
                 std::stop_token stop, CommandResult& r) {
  struct pollfd fds[2] = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  bool killed = false;
  char buf[65536];
  while (open_fds > 0) {
    if (kill_if_due(c, deadline, stop, r)) {
      killed = true;
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    int wait_ms = static_cast<int>(std::min<long long>(std::max<long long>(left, 1), 100));
    int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      size_t room = spec.max_output > bufs[i]->size() ? spec.max_output - bufs[i]->size() : 0;
      if (static_cast<size_t>(got) > room) r.truncated = true;
      bufs[i]->append(buf, std::min(room, static_cast<size_t>(got)));
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  return killed;
}

// Output closed: the child is exiting, or a grandchild holds the pipe. Reaps with the deadline still
// in force so a child that closed its stdout but never exits is killed too, then kills what is left
// of its group and records how it ended.
void reap(const Child& c, const CommandSpec& spec, std::chrono::steady_clock::time_point deadline, std::stop_token stop,
          bool killed, CommandResult& r) {
  // The child is waited for without reaping it (WNOWAIT): while it is a zombie its pid, and so its
  // process group id, cannot be reused, so the group kill below hits only our own leftovers.
  int status = 0;
  bool exited = false;
  while (true) {
    siginfo_t si{};
    int w = ::waitid(P_PID, static_cast<id_t>(c.pid), &si, WEXITED | WNOWAIT | (killed ? 0 : WNOHANG));
    if (w == 0 && si.si_pid == c.pid) {
      exited = true;
      break;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      r.spawn_error = spec.argv[0] + ": waitpid failed: " + std::strerror(errno);
      break;
    }
    if (kill_if_due(c, deadline, stop, r)) {
      killed = true;
      continue;
    }
    // Woken the moment it exits (its output closed a moment before), so it is a zombie for
    // microseconds; at most 100 ms at a time, for the deadline and a stop request.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    await_exit(c.pid, std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(100)));
  }
  if (!killed) ::kill(-c.pid, SIGKILL);  // leftover grandchildren in the group (the zombie keeps the id ours)
  if (exited) {
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // A wait that failed is not an exit status: never "exit 0".
  if (exited && WIFEXITED(status) && !killed) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  } else if (exited && WIFSIGNALED(status)) {
    r.term_signal = WTERMSIG(status);
  }
}

}  // namespace

CommandResult ProcessRunner::run(const CommandSpec& spec, std::stop_token stop) {
  CommandResult r;
  auto started = std::chrono::steady_clock::now();
  if (spec.argv.empty()) {
    r.spawn_error = "empty command";
    return r;
  }
  std::string key = spec.key.value_or([&] {
    std::string k;
    for (const auto& a : spec.argv) k += a + '\0';
    return k;
  }());
  KeyGuard guard(mu_, running_, key);
  if (!guard.acquired()) {
    r.busy = true;
    return r;
  }
  auto exe = runnable_executable(spec);
  if (!exe) {
    r.spawn_error = exe.error();
    r.spawn_kind = exe.kind();
    return r;
  }
  auto child = spawn_child(*exe, spec);
  if (!child) {
    r.spawn_error = child.error();
    r.spawn_kind = child.kind();
    return r;
  }
  auto deadline = started + spec.timeout;
  bool killed = read_output(*child, spec, deadline, stop, r);
  reap(*child, spec, deadline, stop, killed, r);
  r.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

std::string tool_search_path() {
  const char* path = std::getenv("PATH");
  return std::string(path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") +
         ":/usr/sbin:/sbin";
}

std::string find_tool(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  std::string p = tool_search_path();
  for (std::size_t start = 0; start <= p.size();) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    if (end > start) {
      std::string cand = p.substr(start, end - start) + "/" + name;
      if (::access(cand.c_str(), X_OK) == 0) return cand;
    }
    start = end + 1;
  }
  return "";
}

}  // namespace fsaudit
