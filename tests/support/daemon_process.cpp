#include "tests/support/daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon/core/files.hpp"

namespace fsaudit::testing {

std::string fsauditd_binary() {
  if (const char* e = std::getenv("FSAUDITD_BINARY")) return e;
  return FSAUDITD_BINARY;
}

void DaemonProcess::sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

DaemonProcess::DaemonProcess(const std::filesystem::path& dir, const std::string& config_yaml, int port,
                             std::vector<std::string> extra_args, std::map<std::string, std::string> env)
    : dir_(dir), config_(dir / "fsaudit.yaml"), log_(dir / "fsauditd.log"), port_(port) {
  write_text(config_, config_yaml);
  std::vector<std::string> args = {fsauditd_binary(), "--config", config_.string()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    ::unsetenv("JOURNAL_STREAM");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
}

DaemonProcess::~DaemonProcess() {
  if (!reaped_ && pid_ > 0) {
    if (stop(10) == -1) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
  }
}

bool DaemonProcess::running() {
  if (reaped_) return false;
  int st = 0;
  pid_t w = ::waitpid(pid_, &st, WNOHANG);
  if (w == pid_) {
    reaped_ = true;
    exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

std::string DaemonProcess::scrape() { return http_get(port_, "/metrics"); }

std::string DaemonProcess::wait_for_metric(const std::string& name, const std::map<std::string, std::string>& labels,
                                           int timeout_s) {
  return wait_for([&](const std::string& t) { return !std::isnan(scrape_value(t, name, labels)); }, timeout_s);
}

void DaemonProcess::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

int DaemonProcess::stop(int timeout_s) {
  if (reaped_) return exit_code_;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < timeout_s * 20; ++i) {
    if (!running()) return exit_code_;
    sleep_ms(50);
  }
  return -1;
}

std::string DaemonProcess::log() const {
  auto r = read_file(log_);
  return r ? *r : "";
}

}  // namespace fsaudit::testing
