#pragma once
// One small interface per scrubbing filesystem: observe (status/progress/result), start, pause,
// resume, cancel. Every command goes through ctx.runner, every host path through ctx.host. Long
// commands (btrfs scrub start -B, xfs_scrub, bcachefs scrub) run detached through
// fsaudit-scrub-detach so a probe run never waits for a scrub.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/result.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/scrub/model.hpp"

namespace fsaudit::scrub {

struct ScrubTarget {
  std::string name;        // label `target`: mount point, ZFS pool name, or md device ("md0")
  std::string fs;          // zfs | btrfs | bcachefs | xfs | md
  std::string mountpoint;  // btrfs / xfs / bcachefs
  std::string pool;        // zfs
  std::string md;          // md: kernel name, e.g. "md0"
  std::string source;      // mount source (/dev/sdb1), to find a btrfs filesystem's UUID
  std::string key() const;  // file-name-safe unique key: "<fs>_<escaped name>"
};

// Finished detached job (fsaudit-scrub-detach's DIR/status).
struct JobStatus {
  bool finished = false;
  bool alive = false;
  int exit_code = -1;
  int signal = 0;
  double start = 0, end = 0;
  std::string output;
};

struct DriverEnv {
  ProbeContext& ctx;
  std::filesystem::path jobs_dir;  // <state_dir>/scrub/jobs
  std::string detach_helper;       // path of fsaudit-scrub-detach
  double now = 0;
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) = 0;
  virtual Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) = 0;
  virtual bool can_pause(const TargetState& st) const { (void)st; return false; }
  virtual Result<void> pause(const ScrubTarget& t, TargetState& st, DriverEnv& env);
  virtual Result<void> resume(const ScrubTarget& t, TargetState& st, DriverEnv& env) { return start(t, st, env); }
  virtual Result<void> cancel(const ScrubTarget& t, TargetState& st, DriverEnv& env) = 0;
};

std::unique_ptr<Driver> make_driver(const std::string& fs);

// Pure mappings from the reused parsers' results to an Observation (tested on the real fixtures).
std::string extract_zfs_scan_block(std::string_view zpool_status);  // "scan:"/"scrub:" block
Observation observation_from_zpool_status(std::string_view text);
Observation observation_from_btrfs(const btrfs::ScrubSection& total);
Observation observation_from_btrfs_file(const btrfs::ScrubFile& f, const std::string& fsid);

// Helpers shared by the drivers and the probe (exposed for tests).
JobStatus read_job(const HostPaths& host, const std::filesystem::path& dir, int pid);
Result<int> start_detached(DriverEnv& env, const ScrubTarget& t, TargetState& st, const std::vector<std::string>& argv);
// Processes whose argv satisfies `match` (argv[0] basename == `exe` and some argument == `arg`).
bool process_running(const HostPaths& host, const std::string& exe, const std::string& arg,
                     const std::string& also_arg = "");
// PATH lookup as the runner does it (plus /usr/sbin:/sbin); "" if absent.
std::string find_tool(const std::string& name);

}  // namespace fsaudit::scrub
