#pragma once
// Tests that talk to the real fsaudit-helper binary: its socket unit in miniature, an unprivileged
// caller, and a config the helper trusts. Header-only; shared by the canary and scrub tests.
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace fsaudit::testing {

// fsaudit-helper.socket in miniature: a listening unix socket; every connection gets its own
// fsaudit-helper with the accepted socket on fd 0 and 1 (Accept=yes, StandardInput=socket). The
// accepting loop is a forked process, not a thread, so a test can fork callers (run_as) from a
// process that runs no other thread.
class HelperSocket {
 public:
  HelperSocket(const std::filesystem::path& dir, std::vector<std::string> args)
      : path_(dir / "helper.sock"), args_(std::move(args)) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::chmod(path_.c_str(), 0666);
    ok = ok && ::listen(fd, 8) == 0;
    std::vector<char*> argv;
    for (auto& s : args_) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t parent = ::getpid();
    if (ok) server_ = ::fork();
    if (server_ == 0) {
      while (::getppid() == parent) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        pid_t pid = ::fork();
        if (pid == 0) {
          ::dup2(c, 0);
          ::dup2(c, 1);
          ::execv(argv[0], argv.data());
          ::_exit(127);
        }
        ::close(c);
        int st = 0;
        ::waitpid(pid, &st, 0);
      }
      ::_exit(0);
    }
    if (fd >= 0) ::close(fd);
  }
  ~HelperSocket() {
    if (server_ > 0) {
      ::kill(server_, SIGKILL);  // a helper it started finishes its one request on its own
      int st = 0;
      ::waitpid(server_, &st, 0);
    }
  }
  HelperSocket(const HelperSocket&) = delete;
  HelperSocket& operator=(const HelperSocket&) = delete;
  bool ok() const { return server_ > 0; }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
  std::vector<std::string> args_;
  pid_t server_ = -1;
};

// Runs `fn` in a forked child as `uid`/`gid` (no supplementary groups) and returns what it returned
// ("setuid failed" when the child could not drop to that user).
inline std::string run_as(uid_t uid, gid_t gid, const std::function<std::string()>& fn) {
  int pfd[2];
  if (::pipe(pfd) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pfd[0]);
    std::string out = "setuid failed";
    if (uid == 0 || (::setgroups(0, nullptr) == 0 && ::setgid(gid) == 0 && ::setuid(uid) == 0)) out = fn();
    for (std::size_t at = 0; at < out.size();) {
      ssize_t n = ::write(pfd[1], out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(pfd[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pfd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(pfd[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return out;
}

struct Nobody {
  uid_t uid = 65534;
  gid_t gid = 65534;
  std::string name = "nobody";
  Nobody() {
    if (auto* pw = ::getpwnam("nobody")) uid = pw->pw_uid, gid = pw->pw_gid;
  }
};

// A config the helper trusts: root-owned, 0644, in a 0755 root-owned directory.
inline std::filesystem::path trusted_config(const TempDir& d, const std::string& yaml) {
  ::chmod(d.path().c_str(), 0755);
  auto f = d / "fsaudit.yaml";
  write_text(f, yaml);
  ::chmod(f.c_str(), 0644);
  return f;
}

}  // namespace fsaudit::testing
