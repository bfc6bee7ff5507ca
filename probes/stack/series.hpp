#pragma once
// The series every filesystem with members exports from its stack model, written by one function for
// btrfs and ZFS alike: one name, one help text and one rule for when each appears, so the families of
// the two probes merge and an alert on them reads the same for both.
#include <string>

#include "daemon/metrics/batch.hpp"
#include "probes/stack/model.hpp"

namespace fsaudit::stack {

// fsaudit_redundancy_margin and fsaudit_redundancy_designed, only where the layout was built to survive
// a member failure (designed > 0) or that is unknown: a single device or a stripe survives none by
// design, its margin says nothing the stack's layout (fsaudit_stack_info's redundancy label) does not,
// and the alerts on margin ask for designed > 0 (issue 33's series budget). Then one
// fsaudit_redundancy_member_down per member that is down (value 1), with its name and state: what the
// no-redundancy alert names. Labels target (the btrfs mount target, the ZFS pool) and fs.
void redundancy_series(metrics::Batch& b, const StackModel& model, const std::string& target, const std::string& fs);

// Whether redundancy_series writes the margin and designed series for `model`.
bool exports_redundancy(const StackModel& model);

}  // namespace fsaudit::stack
