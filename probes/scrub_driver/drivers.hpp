#pragma once
// The one interface every scrubbing filesystem implements: observe (status/progress/result), start,
// pause, resume, cancel. The drivers themselves live with their filesystem (probes/<fs>/
// scrub_driver.*); this header holds what they share. Every command goes through ctx.runner, every
// host path through ctx.host. Long commands (btrfs scrub start -B, xfs_scrub, bcachefs scrub) run
// detached through fsaudit-scrub-detach so a probe run never waits for a scrub.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "daemon/core/result.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/scrub_driver/model.hpp"

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

// One process of the host as process_running() sees it. Kernel threads are not listed.
struct ProcessEntry {
  std::filesystem::path dir;          // /proc/<pid>
  std::optional<std::string> exe;     // basename of /proc/<pid>/exe; none where the link is not ours to read
  std::optional<std::vector<std::string>> argv;  // /proc/<pid>/cmdline, read only when `exe` may match
};

// The host's kernel threads as the last listings of /proc saw them, kept from pass to pass. A host with
// 9,000 loop devices has 9,000 of them, and a readlink of each one's exe every pass was most of the
// scrub probe's CPU. A PID stays known as a kernel thread only while every listing shows it (one that
// is missing once, it exited, is forgotten, so a reused PID is looked at again), and the whole table is
// read afresh every kRecheck. Only for observing: a scrub is started after a fresh look (start_job).
struct KernelThreadMemo {
  static constexpr std::chrono::minutes kRecheck{5};
  std::unordered_set<std::string> pids;
  SteadyTime full_at{};
  std::uint64_t skipped = 0;  // readlinks saved (tests)
};

struct DriverEnv {
  ProbeContext& ctx;
  std::filesystem::path jobs_dir;  // <state_dir>/scrub/jobs
  std::string detach_helper;       // path of fsaudit-scrub-detach
  std::string privileged_helper;   // fsaudit-helper's socket (canary.helper), for what the host refuses us
  double now = 0;
  // The group that may read the detached jobs (fsaudit-helper: its caller's); none: owner only.
  std::optional<gid_t> job_group = std::nullopt;
  // The host's processes, listed from /proc at most once per pass (process_running), not per target.
  std::optional<std::vector<ProcessEntry>> processes = std::nullopt;
  KernelThreadMemo* kernel_threads = nullptr;  // the probe's, kept across passes; null: read every PID
  // What the pass's discovery already read, by ScrubTarget::key() (ZFS: one `zpool status` of every
  // pool names the pools and says what each is doing). A driver takes its target's entry once, for
  // its first observation in the pass, instead of asking the tool again.
  std::map<std::string, Observation> discovered{};
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

// Drivers whose scrub is one long foreground command (xfs_scrub, bcachefs scrub): the detached job
// is the scrub; its output and exit status are the result.
class JobDriver : public Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override;
  Result<void> cancel(const ScrubTarget& t, TargetState& st, DriverEnv& env) override;

 protected:
  // start_detached after a fresh look at the host's processes (no memo): a scrub somebody else runs on
  // the target is never started twice.
  Result<void> start_job(const ScrubTarget& t, TargetState& st, DriverEnv& env, const std::vector<std::string>& argv);
  virtual std::string exe() const = 0;
  virtual std::string also_arg() const { return ""; }
  virtual void fill_progress(Observation&, const std::string&) {}
  virtual void fill_result(Observation& o, const JobStatus& job, TargetState& st, double now) = 0;
};

// One short command through the runner, bounded by the probe's deadline (at most `cap`).
CommandResult run_command(DriverEnv& env, std::vector<std::string> argv,
                          std::chrono::milliseconds cap = std::chrono::seconds(15));
// A sysfs attribute's content, trimmed: nullopt when the file does not exist; a file that is there
// but cannot be read is an error naming it and the errno (never "nothing there").
Result<std::optional<std::string>> read_trimmed(const std::filesystem::path& p);

// Helpers shared by the drivers and the probe (exposed for tests).
JobStatus read_job(const HostPaths& host, const std::filesystem::path& dir, int pid);
// Starts `argv` through fsaudit-scrub-detach and records its job in `st` (job_pid, job_dir). An argv
// without a program (find_tool found none) is not_installed.
Result<void> start_detached(DriverEnv& env, const ScrubTarget& t, TargetState& st, const std::vector<std::string>& argv);
// Whether a process of `exe` (the basename of its executable; argv[0]'s where /proc/<pid>/exe cannot be
// read) runs with `arg` (and `also_arg`, if given) among its arguments.
bool process_running(const HostPaths& host, const std::string& exe, const std::string& arg,
                     const std::string& also_arg = "");
// The same on the pass's process table (env.processes, read on first use).
bool process_running(DriverEnv& env, const std::string& exe, const std::string& arg, const std::string& also_arg = "");
// PATH lookup: the runner's own (daemon/runner/runner.hpp), so a detached job finds what a run would.
using fsaudit::find_tool;

}  // namespace fsaudit::scrub
