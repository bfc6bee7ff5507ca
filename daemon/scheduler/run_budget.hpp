#pragma once
// The host's ceiling on per-filesystem probe runs. A run of a light probe costs the same whatever
// the host (a wake-up, a few reads, an outcome), so what a host pays is runs per second: at the default
// intervals that is about 0.12 per filesystem, so 10,000 filesystems would run 1,150 a second. Past
// the ceiling every per-filesystem interval is stretched by one factor: each probe keeps its share,
// each filesystem keeps being looked at, and the host's cost stops growing with its filesystems.
#include <map>
#include <string>
#include <vector>

#include "daemon/scheduler/scheduler.hpp"

namespace fsaudit {

struct RunBudget {
  double runs_per_second = 0;  // 0: no ceiling
};

struct RunBudgetPlan {
  double demand = 0;   // per-filesystem runs per second at the configured intervals
  double stretch = 1;  // the factor every per-filesystem interval was multiplied by (>= 1)
  // Each stretched probe's interval after the stretch, in seconds: per-filesystem probes and host-wide
  // sweeps (other host-wide probes absent).
  std::map<std::string, double> interval_seconds;
};

// Stretches the interval of every per-filesystem job without a calendar window (host-wide jobs run once
// per host and are not counted) so that their runs per second stay within the budget. The factor moves
// in steps of 1/8, so that a filesystem mounted or unmounted near the ceiling does not re-time every job.
// A host-wide job whose probe sweeps_targets() is stretched by the same factor (not counted).
RunBudgetPlan apply_run_budget(std::vector<JobSpec>& jobs, const RunBudget& budget);

}  // namespace fsaudit
