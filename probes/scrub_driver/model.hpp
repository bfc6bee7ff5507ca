#pragma once
// What the scrub drivers observe and what the scrub probe remembers per target. Plain data.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace fsaudit::scrub {

// Live state of a scrub on a target right now.
enum class Phase { idle, running, paused };
// How the most recent scrub the tool remembers ended.
enum class Outcome { none, finished, canceled, failed };

struct Errors {
  std::optional<std::uint64_t> found;
  std::optional<std::uint64_t> repaired;
  std::optional<std::uint64_t> uncorrectable;
};

// What a tool says beyond the totals (btrfs): errors by cause ("read", "csum", "verify", "super")
// and per member device (kernel name, as every probe names devices).
struct ErrorDetail {
  std::map<std::string, std::uint64_t> causes;
  std::map<std::string, Errors> devices;
};

// One poll of a target by its driver.
struct Observation {
  bool supported = true;
  std::string unsupported_reason;
  Phase phase = Phase::idle;
  bool resilvering = false;  // ZFS resilver, md resync/recover/reshape: never start a scrub then
  bool degraded = false;
  std::optional<double> progress;  // 0..1 while running/paused
  std::optional<double> started;   // Unix seconds: start of the current (or last) scrub as the tool says
  // The last ended scrub as the tool remembers it (valid when phase == idle).
  Outcome last_outcome = Outcome::none;
  std::optional<double> last_end;
  std::optional<double> last_duration;
  std::optional<double> bytes;  // scrubbed so far (running) / in the last scrub (idle)
  std::optional<double> rate;   // bytes per second as the tool reports it
  std::optional<double> repaired_bytes;  // ZFS reports repaired bytes, not a count
  Errors errors;                // of the current/last scrub
  ErrorDetail error_detail;     // of the current/last scrub, where the tool breaks it down
  std::string detail;           // one line for logs
  // "running" only because fsaudit's own job (e.g. `btrfs scrub start -B`) has not exited and written
  // its last records after the kernel's scrub stopped: not a scrub that anybody started or resumed.
  bool winding_down = false;
};

struct RunRecord {
  double start = 0, end = 0, duration = 0;
  std::optional<double> bytes, rate, repaired_bytes;
  Errors errors;
  ErrorDetail error_detail;
  std::string result;  // ok | errors | canceled | failed
  bool by_us = false;
};

// Persistent per-target state (<state_dir>/scrub/<key>.state).
struct TargetState {
  double first_seen = 0;
  bool running = false;       // a run is in progress or paused (ours or observed)
  bool by_us = false;         // the current run was started by fsaudit
  bool paused_by_us = false;  // fsaudit paused it at the window's end (or on an operator's request)
  bool by_operator = false;   // the current run was started or paused on an operator's request
  double run_start = 0;
  std::optional<double> run_bytes;  // last progress seen of the current run
  int job_pid = 0;            // detached job (btrfs/xfs/bcachefs) running the scrub command
  std::string job_dir;
  double last_attempt = 0;    // last time fsaudit tried to start (or resume) a scrub
  std::string last_attempt_error;
  bool pause_unsupported = false;  // learned: this tool cannot pause (zfs-fuse's zpool has no -p)
  std::string unsupported_reason;  // learned: e.g. the kernel has no XFS online scrub
  double unsupported_since = 0;
  RunRecord last;                  // the last run that ended
  double last_completed_end = 0;   // end of the last run that finished (not canceled/failed)
  std::map<std::string, std::uint64_t> runs;  // result -> count

  std::string serialize() const;
  static TargetState parse(const std::string& text);
};

}  // namespace fsaudit::scrub
