#pragma once
// What the cycle needs from each filesystem stack: take the canary offline and back (to drop its
// caches), list its member devices, read its error counters, scrub it, clear the counters it caused.
// Parsers are pure; StackOps runs the tools through CommandRunner.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/sections/canary.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/canary/parse.hpp"
#include "probes/stack/model.hpp"

namespace fsaudit::canary {

// Error counters of the whole canary, for before/after comparisons.
struct Counters {
  std::uint64_t checksum = 0;  // btrfs corruption_errs, ZFS CKSUM (leaf vdevs)
  std::uint64_t read = 0;      // btrfs read_io_errs, ZFS READ (leaf vdevs)
  std::map<std::string, std::uint64_t> per_device;  // canonical member path (as far as resolvable) -> checksum + read
  std::uint64_t total() const { return checksum + read; }
};

// The members whose counters rose from `before` to `after`.
std::vector<std::string> devices_with_new_errors(const Counters& before, const Counters& after);


struct ScrubOutcome {
  bool supported = false;
  bool ok = false;             // the scrub ran to completion
  std::string error;
  double seconds = 0;
  std::uint64_t errors_found = 0;
  std::uint64_t errors_repaired = 0;
  std::uint64_t uncorrectable = 0;
  std::string summary;         // one line, for the journal
};

struct StackEnv {
  CommandRunner& runner;
  const ToolPaths& tools;
  std::stop_token stop;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // per command
  // How long `btrfs scrub start -B` may outlive btrfs's final records of its scrub before it is
  // stopped (see StackOps::btrfs_scrub).
  std::chrono::milliseconds tool_exit_grace{std::chrono::seconds(30)};
  std::string tool(const std::string& n) const {
    auto it = tools.find(n);
    return it == tools.end() || it->second.empty() ? n : it->second;
  }
};

class StackOps {
 public:
  StackOps(const config::CanaryTarget& t, StackEnv env) : t_(t), env_(env) {}
  bool checksumming() const { return t_.fs == "btrfs" || t_.fs == "zfs"; }
  // Members as the stack itself reports them (btrfs fi show, zpool status), resolved paths.
  Result<std::vector<std::string>> members();
  Result<void> take_offline();  // unmount / zpool export
  Result<void> bring_online();  // mount / zpool import
  Result<Counters> counters();
  // What the stack is and how healthy it is now, read through the filesystem's own parser
  // (zpool status + zfs get; btrfs sysfs of the mounted canary; a plain model for XFS/ext4).
  Result<stack::StackModel> model(const HostPaths& host);
  ScrubOutcome scrub();
  Result<void> clear_counters();

 private:
  CommandResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout = {}, std::stop_token stop = {});
  struct BtrfsScrubRun {
    CommandResult start;       // `btrfs scrub start -B -R`
    std::string final_status;  // `btrfs scrub status -d -R` once it said final, when start was stopped
  };
  BtrfsScrubRun btrfs_scrub();
  const config::CanaryTarget& t_;
  StackEnv env_;
};

bool expectation_met(const std::string& expect, const std::string& verdict);

}  // namespace fsaudit::canary
