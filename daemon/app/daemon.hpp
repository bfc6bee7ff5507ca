#pragma once
// fsauditd's main loop: config -> targets -> scheduler -> probes -> metrics store -> /metrics, with
// systemd notify/watchdog, SIGHUP reload and SIGTERM shutdown.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::app {

// Something lab mode built for this process; destroying it tears down exactly what it created.
class LabHandle {
 public:
  virtual ~LabHandle() = default;
  // A reloaded config file does not list the lab's own targets: add them again.
  virtual void add_to(config::Config& cfg) const = 0;
};

// What the composition root (fsauditd/) plugs in, so that daemon/ names no probe type.
struct Extensions {
  // Every probe the config asks for.
  std::function<std::vector<std::unique_ptr<Probe>>(const config::Config&)> make_probes;
  // Series that follow from the config alone (canary identity), republished on every (re)load.
  std::function<metrics::Batch(const config::Config&)> config_metrics;
  // Probes --once leaves out (a canary cycle belongs to the service and its lock).
  std::function<bool(const Probe&)> skip_once;
  // The D-Bus "init" job for one target (canary init).
  std::function<Result<void>(const config::Config&, const std::string& target, CommandRunner&)> init_target;
  // Lab mode (config canary.lab.enabled): builds its targets into `cfg` before the probes exist.
  // nullptr when there is nothing to tear down; errors are logged by the hook.
  std::function<std::unique_ptr<LabHandle>(config::Config& cfg)> start_lab;
};

struct Options {
  std::string config_path;  // empty: /etc/fsaudit/fsaudit.yaml if it exists, else built-in defaults
  bool once = false;        // run every probe once, print the metrics, exit
};

// Validates a config file: prints "FILE: OK" or the error; returns the process exit code (0/1).
int check_config(const std::string& path);

// Runs the daemon until SIGTERM/SIGINT; returns the process exit code.
int run(const Options& opts, const Extensions& ext);

}  // namespace fsaudit::app
