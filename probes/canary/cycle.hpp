#pragma once
// One canary cycle: write -> locate -> offline -> inject -> online -> read -> scrub ->
// verify -> clean up, with an in-flight marker in the state dir so that a crash at any point is
// found and cleaned up on the next run.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/sections/canary.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/canary/injection.hpp"

namespace fsaudit::canary {

enum class Verdict { repaired, detected, silent, unverified, not_injectable, refused, error };
// The label value and the spelling in reports and state files: "repaired", ..., "not_injectable".
std::string_view to_string(Verdict v);
// The inverse of to_string(); nullopt for anything else.
std::optional<Verdict> verdict_from(std::string_view s);
std::ostream& operator<<(std::ostream& o, Verdict v);
// Verdicts, in the order of the state set.
const std::vector<Verdict>& verdicts();

struct CycleReport {
  std::string canary, fs, layout, expect;
  Verdict verdict = Verdict::error;
  std::string reason;
  bool expectation_met = false;
  double started = 0, finished = 0;  // Unix seconds
  double duration_seconds = 0;
  std::string read_result;           // ok | eio | mismatch | error: ...
  std::string detected_by;           // read | scrub | ""
  std::uint64_t block_size = 0, file_blocks = 0;
  std::uint64_t copies_found = 0;
  std::vector<std::string> copies;   // "device@offset"
  std::optional<Injection> injection;
  double time_to_detect_seconds = -1;  // < 0: nothing detected
  std::uint64_t errors_counted_on_read = 0;
  bool scrub_supported = false, scrub_ran = false, scrub_ok = false;
  double scrub_seconds = 0;
  std::uint64_t scrub_found = 0, scrub_repaired = 0, scrub_uncorrectable = 0;
  std::string scrub_summary;
  int repair_verified = -1;          // -1 unknown / not applicable, 0 bad copy still there, 1 rewritten
  std::uint64_t scan_bytes = 0;
  double scan_seconds = 0;
  std::uint64_t caused_errors_cleared = 0;
  std::uint64_t preexisting_errors = 0;  // counters were non-zero before the cycle: a real error; not cleared
  std::string recovery;              // a pending cycle found at start and cleaned up (empty if none)
  std::vector<std::string> cleanup_errors;
  std::uint64_t expected_copies = 0;  // from the stack model; 0 = unknown (mixed layouts: not checked)
  // Not persisted: the cycle never started because another process holds the canary's lock.
  bool busy = false;
  double scan_bytes_per_second() const { return scan_seconds > 0 ? scan_bytes / scan_seconds : 0; }
  std::string to_json() const;
  static std::optional<CycleReport> from_json(const std::string& text);
};

struct CycleEnv {
  CycleEnv(const HostPaths& h, CommandRunner& r, const ToolPaths& t, const Clock& c, std::filesystem::path sd,
           std::stop_token st = {})
      : host(h), runner(r), tools(t), clock(c), state_dir(std::move(sd)), stop(st) {}
  const HostPaths& host;
  CommandRunner& runner;
  const ToolPaths& tools;
  const Clock& clock;
  std::filesystem::path state_dir;
  std::stop_token stop;
  std::chrono::milliseconds command_timeout{std::chrono::minutes(10)};
  unsigned scan_queue_depth = 32;
  // Called as the cycle passes each phase ("marked", "written", "offline", "injected", "online",
  // "scrubbing", "cleaning"; "recovering" and "restoring" during recovery and restores). Tests kill
  // the process here to prove that every phase is recovered from.
  std::function<void(const std::string&)> on_phase;
};

inline constexpr const char* kCanaryFile = "fsaudit-canary.dat";

// Runs one full cycle (first cleaning up a pending one if the marker says so). Never throws.
CycleReport run_cycle(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env);

// Only the recovery part: "" if nothing was pending, else what was found and done.
std::string recover_pending(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env);

std::filesystem::path inflight_path(const std::filesystem::path& state_dir, const std::string& name);

// Persistent per-canary totals (state.json), updated after each cycle.
struct CanaryState {
  std::map<std::string, std::uint64_t> runs;  // verdict -> count
  std::uint64_t cycles = 0;
  std::uint64_t recoveries = 0;
  std::uint64_t caused_errors_cleared = 0;
  double last_run = 0;
  std::optional<CycleReport> last;
};
CanaryState load_state(const std::filesystem::path& state_dir, const std::string& name);
Result<void> save_state(const std::filesystem::path& state_dir, const std::string& name, const CanaryState& s);
// Adds the report to the persistent state and writes it.
CanaryState record_cycle(const std::filesystem::path& state_dir, const CycleReport& r);

}  // namespace fsaudit::canary
