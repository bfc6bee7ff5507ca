#include "tests/support/journald.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fs = std::filesystem;

namespace fsaudit::testing {

PrivateJournald::PrivateJournald(const std::string& prefix) : ns_(unique_name(prefix)) {
  std::string mid;
  if (auto t = read_file("/etc/machine-id")) mid = std::string(trim(*t));
  conf_ = "/etc/systemd/journald@" + ns_ + ".conf";
  journal_dir_ = "/var/log/journal/" + mid + "." + ns_;
  runtime_dir_ = "/run/systemd/journal." + ns_;
  write_text(conf_, "[Journal]\nStorage=persistent\nReadKMsg=yes\n");
  start();
}

PrivateJournald::~PrivateJournald() {
  stop();
  std::error_code ec;
  fs::remove(conf_, ec);
  fs::remove_all(journal_dir_, ec);
  fs::remove_all(runtime_dir_, ec);
}

void PrivateJournald::start() {
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::unsetenv("NOTIFY_SOCKET");
    ::execl("/lib/systemd/systemd-journald", "systemd-journald", ns_.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 100 && !fs::exists(journal_dir_); ++i) ::usleep(50'000);
  ::usleep(300'000);  // its sockets come up after the directory
}

void PrivateJournald::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int st = 0;
  for (int i = 0; i < 100 && ::waitpid(pid_, &st, WNOHANG) == 0; ++i) ::usleep(50'000);
  if (::waitpid(pid_, &st, WNOHANG) == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &st, 0);
  }
  pid_ = -1;
}

bool PrivateJournald::ok() const { return pid_ > 0 && fs::exists(journal_dir_); }
bool PrivateJournald::running() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }

std::size_t PrivateJournald::files() const {
  std::size_t n = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(journal_dir_, ec)) n += e.path().extension() == ".journal" ? 1 : 0;
  return n;
}

}  // namespace fsaudit::testing
