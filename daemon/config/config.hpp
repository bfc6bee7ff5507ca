#pragma once
// fsauditd's configuration as typed data. Parsing (YAML -> structs) and validation happen here;
// nothing in here touches the host.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/reader.hpp"
#include "daemon/config/sections/btrfs.hpp"
#include "daemon/config/sections/capacity.hpp"
#include "daemon/config/sections/canary.hpp"
#include "daemon/config/sections/ext4.hpp"
#include "daemon/config/sections/kernel_log.hpp"
#include "daemon/config/sections/smart.hpp"
#include "daemon/config/sections/latency.hpp"
#include "daemon/config/sections/scrub.hpp"
#include "daemon/config/sections/setup.hpp"
#include "daemon/config/sections/xfs.hpp"
#include "daemon/config/sections/zfs.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/probe/targets.hpp"

namespace fsaudit::config {

struct ProbeSettings {
  bool enabled = true;
  std::chrono::milliseconds interval{std::chrono::seconds(30)};
  std::chrono::milliseconds jitter{std::chrono::seconds(2)};
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
};

// `probe_budget:` the host's ceiling on per-filesystem probe runs (daemon/scheduler/run_budget.hpp).
struct ProbeBudgetConfig {
  double runs_per_second = 125;  // 0: no ceiling
};

// `sel` without the canaries' mount points (each excluded by its own path).
TargetSelection without_canaries(TargetSelection sel, const CanaryConfig& canary);

struct Config {
  std::string source;  // the file it came from, or "(defaults)"
  std::string listen_address = "127.0.0.1";
  int listen_port = 9717;
  std::string dbus_address = "system";  // "system", "none", or a D-Bus address (tests)
  std::string web_config_file;  // TLS and basic auth for the listener (node_exporter's web config format)
  std::filesystem::path state_dir = "/var/lib/fsaudit";
  std::string log_level = "info";
  HostPaths host;
  int workers = 4;
  ToolPaths tools;
  TargetSelection targets;
  std::map<std::string, ProbeSettings> probes;
  ProbeBudgetConfig probe_budget;

  BtrfsConfig btrfs;
  CapacityConfig capacity;
  Ext4Config ext4;
  KernelLogConfig kernel_log;
  CanaryConfig canary;
  LatencyConfig latency;
  ScrubConfig scrub;
  SetupConfig setup;
  SmartConfig smart;
  XfsConfig xfs;
  ZfsConfig zfs;

  const ProbeSettings& schedule(const std::string& probe) const;
  // The production filesystems: `targets` without the canaries' mount points. Canaries are corrupted
  // on purpose; only the canary probe looks at them (health, latency, scrub and setup never do).
  TargetSelection watched_targets() const { return without_canaries(targets, canary); }
};

// Every probe type, in start order: the one registration table. Config reads each row's default
// schedule and section parser from here; fsauditd/probes.cpp (the composition root) builds the probes
// of each row by its name and refuses to start when a row has no factory.
struct ProbeType {
  std::string name;  // the probe's name() and its key under `probes:`
  // The default of `probes.<name>`; nullopt when the probe's own section schedules it (canary,
  // latency: not accepted under `probes:`).
  std::optional<ProbeSettings> schedule;
  std::string section;                               // the top-level section it owns, "" for none
  void (*parse_section)(Section, Config&) = nullptr;  // fills that section's part of Config
};
const std::vector<ProbeType>& probe_types();

// Throws ConfigError with "FILE:LINE:COL: key 'a.b': what is wrong; how to fix it".
Config parse_config(const std::string& yaml_text, const std::string& file_label);
Config load_config_file(const std::filesystem::path& path);
Config default_config();

}  // namespace fsaudit::config
