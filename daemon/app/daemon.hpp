#pragma once
// fsauditd's main loop: config -> targets -> scheduler -> probes -> metrics store -> /metrics, with
// systemd notify/watchdog, SIGHUP reload and SIGTERM shutdown.
#include <string>

namespace fsaudit::app {

struct Options {
  std::string config_path;  // empty: /etc/fsaudit/fsaudit.yaml if it exists, else built-in defaults
  bool once = false;        // run every probe once, print the metrics, exit
};

// Validates a config file: prints "FILE: OK" or the error; returns the process exit code (0/1).
int check_config(const std::string& path);

// Runs the daemon until SIGTERM/SIGINT; returns the process exit code.
int run(const Options& opts);

}  // namespace fsaudit::app
