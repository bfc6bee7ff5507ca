#include "probes/scrub/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fsaudit::scrub {
namespace {

std::string result_of(const Observation& obs) {
  switch (obs.last_outcome) {
    case Outcome::canceled: return "canceled";
    case Outcome::failed: return "failed";
    case Outcome::finished:
    case Outcome::none: break;
  }
  const auto& e = obs.errors;
  if (e.found.value_or(0) > 0 || e.uncorrectable.value_or(0) > 0 || e.repaired.value_or(0) > 0 ||
      obs.repaired_bytes.value_or(0) > 0)
    return "errors";
  return "ok";
}

void close_run(TargetState& st, const Observation& obs, double start, double end) {
  RunRecord r;
  r.start = start;
  r.end = end;
  r.duration = obs.last_duration.value_or(std::max(0.0, end - start));
  if (r.duration <= 0 && end > start) r.duration = end - start;
  r.bytes = obs.bytes ? obs.bytes : st.run_bytes;
  r.rate = obs.rate;
  if (!r.rate && r.bytes && r.duration > 0) r.rate = *r.bytes / r.duration;
  r.repaired_bytes = obs.repaired_bytes;
  r.errors = obs.errors;
  r.error_detail = obs.error_detail;
  r.result = result_of(obs);
  r.by_us = st.by_us;
  if (r.result == "ok" || r.result == "errors") st.last_completed_end = std::max(st.last_completed_end, end);
  st.runs[r.result]++;
  st.last = r;
  st.running = false;
  st.by_us = false;
  st.paused_by_us = false;
  st.by_operator = false;
  st.run_start = 0;
  st.run_bytes.reset();
  st.job_pid = 0;
}

constexpr const char* kDegradedReason = "target is degraded (allow_degraded: false)";
constexpr const char* kObserveOnlyReason = "observe_only is set: fsaudit never starts scrubs here";

std::string fmt_time(double t) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f", t);
  return b;
}

}  // namespace

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::scheduled: return "scheduled";
    case Mode::observed_timer: return "observed-timer";
    case Mode::observe_only: return "observe_only";
    case Mode::unsupported: return "unsupported";
  }
  return "scheduled";
}

const char* action_name(Action a) {
  switch (a) {
    case Action::none: return "none";
    case Action::start: return "start";
    case Action::resume: return "resume";
    case Action::pause: return "pause";
    case Action::cancel: return "cancel";
  }
  return "none";
}

bool absorb(TargetState& st, const Observation& obs, double now) {
  if (st.first_seen <= 0) st.first_seen = now;
  if (!obs.supported) return false;
  if (obs.phase == Phase::running || obs.phase == Phase::paused) {
    if (!st.running) {
      st.running = true;
      st.by_us = false;
      st.run_start = obs.started.value_or(now);
    } else if (obs.started && st.run_start <= 0) {
      st.run_start = *obs.started;
    }
    // Resumed (by anybody): a later idle is that run's end. Not while our own job winds down after our
    // pause: under load btrfs-progs' records lag the cancel by moments, and that pause was then closed
    // as a canceled run (seen in CI: ScrubControlLab).
    if (obs.phase == Phase::running && !obs.winding_down) st.paused_by_us = false;
    if (obs.bytes) st.run_bytes = obs.bytes;
    return false;
  }
  // Idle now.
  if (st.running) {
    if (st.paused_by_us) return false;  // our pause: the run continues in the next window
    double start = st.run_start > 0 ? st.run_start : obs.started.value_or(now);
    double end = now;
    if (obs.last_end && *obs.last_end >= start - 1) end = *obs.last_end;
    else if (obs.last_duration && obs.started) end = *obs.started + *obs.last_duration;
    close_run(st, obs, start, end);
    return true;
  }
  // A scrub that ran between two polls, or before fsaudit watched: the tool remembers it.
  if (obs.last_outcome != Outcome::none && obs.last_end && *obs.last_end > st.last.end + 1) {
    double start = obs.started.value_or(*obs.last_end - obs.last_duration.value_or(0));
    close_run(st, obs, start, *obs.last_end);
    return true;
  }
  return false;
}

double spread_fraction(const std::string& key) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<double>(h >> 11) / static_cast<double>(1ull << 53);
}

double due_time(const config::ScrubPolicy& p, const TargetState& st, const std::string& key) {
  double interval = std::chrono::duration<double>(p.interval).count();
  double offset = spread_fraction(key) * p.spread * interval;
  if (st.last_completed_end > 0) return st.last_completed_end + interval + offset;
  // Never completed (as far as fsaudit and the tool know): due soon after first sight, spread so a
  // fleet deployed at once does not scrub at once.
  return st.first_seen + offset;
}

Decision plan(const PlanInput& in, const TargetState& st, const Observation& obs) {
  const auto& p = *in.policy;
  Decision d;
  auto wall = [](double t) { return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::duration<double>(t))); };
  auto secs = [](WallTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); };
  auto in_window = p.window.contains(wall(in.now), in.tz_offset);

  if (!obs.supported) {
    d.mode = Mode::unsupported;
    d.code = "unsupported";
    d.reason = obs.unsupported_reason;
    return d;
  }
  d.mode = p.observe_only ? Mode::observe_only
           : (p.detect_timers && !in.timer.empty()) ? Mode::observed_timer
                                                     : Mode::scheduled;
  if (d.mode == Mode::scheduled) {
    double due = std::max(due_time(p, st, in.key), in.now);
    d.next_due = secs(p.window.next_start(wall(due), in.tz_offset));
    if (st.running) d.next_due.reset();  // a run is under way
  }

  // Started or paused on an operator's request: the operator decides when it stops or resumes.
  if (st.running && st.by_operator) {
    bool paused = obs.phase != Phase::running;
    d.code = paused ? "paused" : "running";
    d.reason = paused ? "paused on an operator's request (fsauditctl scrub start resumes it)"
                      : "scrub started on an operator's request is running";
    return d;
  }
  // Our own run: window end handling and resuming after a pause.
  if (st.running && st.by_us) {
    if (obs.phase == Phase::running) {
      if (in_window || p.at_window_end == config::AtWindowEnd::keep_running) {
        d.code = "running";
        d.reason = "scrub started by fsaudit is running";
        return d;
      }
      bool pause = p.at_window_end == config::AtWindowEnd::pause && in.can_pause;
      d.action = pause ? Action::pause : Action::cancel;
      d.code = action_name(d.action);
      d.reason = std::string("window \"") + p.window.text + "\" ended: " + (pause ? "pausing" : "canceling") +
                 (p.at_window_end == config::AtWindowEnd::pause && !in.can_pause ? " (this tool cannot pause)" : "");
      return d;
    }
    // Paused (by us, or by someone else while it was ours): resume inside the window.
    if (!in_window) {
      d.code = "paused";
      d.reason = "paused until the window \"" + p.window.text + "\" opens";
      d.next_due = secs(p.window.next_start(wall(in.now), in.tz_offset));
      return d;
    }
  } else if (obs.phase == Phase::running || obs.phase == Phase::paused) {
    d.code = "busy";
    d.reason = obs.phase == Phase::running ? "a scrub started by someone else is running: observing it"
                                           : "a scrub started by someone else is paused: leaving it alone";
    return d;
  }
  if (d.mode != Mode::scheduled) {
    d.code = d.mode == Mode::observe_only ? "observe_only" : "timer";
    d.reason = d.mode == Mode::observe_only ? kObserveOnlyReason
                                            : "scrubbed by " + in.timer + ": observing instead of scheduling";
    return d;
  }
  bool resuming = st.running && st.by_us;  // paused and inside the window
  if (obs.resilvering) {
    d.code = "resilvering";
    d.reason = "a resilver/resync is in progress";
    return d;
  }
  if (obs.degraded && !p.allow_degraded) {
    d.code = "degraded";
    d.reason = kDegradedReason;
    return d;
  }
  if (!resuming) {
    double due = due_time(p, st, in.key);
    if (in.now < due) {
      d.code = "not_due";
      d.reason = "next scrub due at " + fmt_time(due);
      return d;
    }
    if (!in_window) {
      d.code = "outside_window";
      d.reason = "due, waiting for the window \"" + p.window.text + "\"";
      return d;
    }
    if (st.last_attempt > 0 && !st.last_attempt_error.empty() && in.now - st.last_attempt < kRetryAfterFailureSeconds) {
      d.code = "retry_wait";
      d.reason = "last start failed (" + st.last_attempt_error + "); retrying later";
      return d;
    }
  }
  if (p.io_load_threshold > 0 && in.io_load && *in.io_load > p.io_load_threshold) {
    char b[160];
    std::snprintf(b, sizeof b, "host I/O load %.1f%% is above io_load_threshold %.1f%%: retrying later", *in.io_load,
                  p.io_load_threshold);
    d.code = "io_load";
    d.reason = b;
    return d;
  }
  if (in.running_on_host >= in.max_concurrent) {
    d.code = "concurrency";
    d.reason = std::to_string(in.running_on_host) + " scrub(s) already running on this host (max_concurrent " +
               std::to_string(in.max_concurrent) + ")";
    return d;
  }
  d.action = resuming ? Action::resume : Action::start;
  d.code = action_name(d.action);
  d.reason = resuming ? "resuming the paused scrub inside the window" : "scrub due and allowed: starting";
  return d;
}

Result<void> request_allowed(const config::ScrubPolicy& p, const std::string& action, const std::string& target,
                             const TargetState& st, const Observation& obs, bool operator_request) {
  if (operator_request) return {};
  const bool ours = st.running && st.by_us;
  if (action == "start") {
    if (p.observe_only) return err(target + ": " + kObserveOnlyReason, ErrorKind::refused);
    if (obs.degraded && !p.allow_degraded) return err(target + ": " + kDegradedReason, ErrorKind::refused);
    if (st.running && !ours && obs.phase != Phase::running)
      return err("the paused scrub of " + target + " was not started by fsaudit: only an operator (root) resumes it", ErrorKind::refused);
    return {};
  }
  if (!ours)
    return err("the scrub of " + target + " was not started by fsaudit (its state records no run of fsaudit's): only an "
           "operator (root) may " + action + " it", ErrorKind::refused);
  return {};
}

}  // namespace fsaudit::scrub
