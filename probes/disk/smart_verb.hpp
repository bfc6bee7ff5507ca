#pragma once
// fsaudit-helper's read-only SMART verb (the daemon is unprivileged; smartctl needs root):
//   {"verb": "smart-read", "disk": "sda"}  ->  {"ok": true, "result": {"disk", "exit", "out"}}
// The disk is a kernel name only: no path, no option, a whole disk the helper finds in sysfs itself.
// The command is fixed: smartctl --json -a -n standby /dev/<disk> (never wakes a sleeping disk).
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::disk {

inline constexpr const char* kSmartVerb = "smart-read";

// Refused unless `disk` is the kernel name of a whole disk present in <sysfs>/class/block.
Result<void> check_smart_disk(const HostPaths& host, const std::string& disk);
// The one smartctl command line, for the helper and for a daemon that runs as root.
std::vector<std::string> smartctl_argv(const std::string& smartctl, const std::string& disk);

// The helper side: nullopt when `line` is not the smart verb, else the answer line (with "\n").
std::optional<std::string> handle_smart_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner);

}  // namespace fsaudit::disk
