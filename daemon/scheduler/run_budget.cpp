#include "daemon/scheduler/run_budget.hpp"

#include <algorithm>
#include <cmath>

namespace fsaudit {

namespace {

bool counted(const JobSpec& j) {
  return !j.target->is_host() && (!j.window || j.window->always) && j.interval.count() > 0;
}

// A host-wide pass over every filesystem: stretched along, not counted (it is one run).
bool swept(const JobSpec& j) {
  return j.target->is_host() && j.probe->sweeps_targets() && (!j.window || j.window->always) && j.interval.count() > 0;
}

}  // namespace

RunBudgetPlan apply_run_budget(std::vector<JobSpec>& jobs, const RunBudget& budget) {
  RunBudgetPlan plan;
  for (const auto& j : jobs)
    if (counted(j)) plan.demand += 1000.0 / static_cast<double>(j.interval.count());
  if (budget.runs_per_second > 0 && plan.demand > budget.runs_per_second)
    // Less a hair: a demand that is an exact multiple, summed in floating point, is not one step more.
    plan.stretch = std::ceil(plan.demand / budget.runs_per_second * 8 - 1e-9) / 8;
  for (auto& j : jobs) {
    if (!counted(j) && !swept(j)) continue;
    if (plan.stretch > 1)
      j.interval = std::chrono::milliseconds(
          static_cast<long long>(std::ceil(static_cast<double>(j.interval.count()) * plan.stretch)));
    plan.interval_seconds[j.probe->name()] = static_cast<double>(j.interval.count()) / 1000.0;
  }
  return plan;
}

}  // namespace fsaudit
