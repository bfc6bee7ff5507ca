#pragma once
// Runs the real fsauditd binary for integration and lab tests.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace fsaudit::testing {

std::string fsauditd_binary();

class DaemonProcess {
 public:
  // Writes `config_yaml` to <dir>/fsaudit.yaml and starts `fsauditd --config <that> <extra_args>`.
  // The YAML should contain "listen: 127.0.0.1:<port>" (use free_port()) and "state_dir: ...".
  DaemonProcess(const std::filesystem::path& dir, const std::string& config_yaml, int port,
                std::vector<std::string> extra_args = {}, std::map<std::string, std::string> env = {});
  ~DaemonProcess();  // SIGTERM, then SIGKILL after 10 s
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  int pid() const { return pid_; }
  int port() const { return port_; }
  bool running();
  // GET /metrics; "" if not reachable.
  std::string scrape();
  // Polls /metrics until `pred(text)` holds or timeout; returns the last scrape.
  template <class Pred>
  std::string wait_for(Pred pred, int timeout_s = 60) {
    auto text = scrape();
    for (int i = 0; i < timeout_s * 10 && !pred(text); ++i) {
      sleep_ms(100);
      text = scrape();
    }
    return text;
  }
  // Polls until a sample `name{labels}` exists.
  std::string wait_for_metric(const std::string& name, const std::map<std::string, std::string>& labels = {},
                              int timeout_s = 60);
  // Sends a signal; stop() = SIGTERM and wait; returns exit code (or 128+signal), -1 on timeout.
  void signal(int sig);
  int stop(int timeout_s = 10);
  std::string log() const;  // stdout+stderr so far
  const std::filesystem::path& config_path() const { return config_; }

  static void sleep_ms(int ms);

 private:
  std::filesystem::path dir_, config_, log_;
  int port_ = 0;
  int pid_ = -1;
  int exit_code_ = -1;
  bool reaped_ = false;
};

}  // namespace fsaudit::testing
