#pragma once
// The scrub scheduler's decisions, as pure functions of (policy, remembered state, observation,
// host load, clock). No I/O: tested with a fake clock (tests/scrub/planner_test.cpp).
#include <optional>
#include <string>

#include "daemon/config/sections/scrub.hpp"
#include "probes/scrub_driver/model.hpp"

namespace fsaudit::scrub {

// Folds one observation into the remembered state: notices runs that started or ended (ours or
// anybody's: cron, distro timers, an admin), and scrubs that ran entirely between two polls or
// before fsaudit ran (the tool remembers the last one). Returns true when a run ended just now.
bool absorb(TargetState& st, const Observation& obs, double now);

enum class Mode { scheduled, observed_timer, observe_only, unsupported };
const char* mode_name(Mode m);

enum class Action { none, start, resume, pause, cancel };
const char* action_name(Action a);

struct PlanInput {
  const config::ScrubPolicy* policy = nullptr;
  std::string key;        // stable per-target key: seeds the spread offset
  double now = 0;         // wall clock, Unix seconds
  long tz_offset = 0;     // local = UTC + offset, for the calendar window
  std::optional<double> io_load;  // percent, nullopt when unknown
  int running_on_host = 0;        // scrubs running now on this host (any target, anybody's)
  int max_concurrent = 1;
  std::string timer;      // enabled distro timer / cron job scrubbing this target ("" = none)
  bool can_pause = true;  // the driver can pause (else pause falls back to cancel)
};

struct Decision {
  Action action = Action::none;
  Mode mode = Mode::scheduled;
  std::string code;    // short, bounded: not_due, outside_window, io_load, concurrency, degraded,
                       // busy, resilvering, running, paused, start, resume, pause, cancel, ...
  std::string reason;  // one line for people
  std::optional<double> next_due;  // when fsaudit would start the next scrub (scheduled mode)
  bool failed = false;  // carrying it out failed (the reason says why)
};

// Deterministic fraction in [0,1) for a key (FNV-1a), the per-target spread as Ceph randomises it.
double spread_fraction(const std::string& key);
// When the next scrub is due by the interval alone (before the window is applied).
double due_time(const config::ScrubPolicy& p, const TargetState& st, const std::string& key);

Decision plan(const PlanInput& in, const TargetState& st, const Observation& obs);

// The scrub policy for a start, pause or cancel that comes outside the planner: "" when `action`
// may be carried out on `target`, else why not. The same function in fsauditd and in fsaudit-helper
// (which applies it from its own config, whoever asks). An operator's request (root: fsauditctl
// scrub to a root fsauditd, or a root client of the helper) is the operator's call and always
// passes. Anybody else's (fsauditd's own, and everything an unprivileged daemon sends the helper):
//  * start/resume: never under observe_only, never on a degraded target without allow_degraded,
//    and a paused scrub is resumed only when fsaudit started it;
//  * pause/cancel: only a scrub fsaudit started (the state records it), never somebody else's.
// Refused (kind refused, saying why) where the policy does not allow it.
Result<void> request_allowed(const config::ScrubPolicy& policy, const std::string& action, const std::string& target,
                             const TargetState& st, const Observation& obs, bool operator_request);

// Wait before retrying a start that failed.
inline constexpr double kRetryAfterFailureSeconds = 15 * 60;

}  // namespace fsaudit::scrub
