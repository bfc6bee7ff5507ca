#include "probes/stack/series.hpp"

namespace fsaudit::stack {

bool exports_redundancy(const StackModel& m) { return !m.designed_redundancy || *m.designed_redundancy > 0; }

void redundancy_series(metrics::Batch& b, const StackModel& model, const std::string& target, const std::string& fs) {
  if (exports_redundancy(model)) {
    if (model.margin)
      b.gauge("fsaudit_redundancy_margin",
              "Member device failures the filesystem or pool survives right now, with the members already "
              "offline, missing or faulted taken away (a healthy 2-way mirror: 1; a degraded one: 0).",
              {{"target", target}, {"fs", fs}}, *model.margin);
    if (model.designed_redundancy)
      b.gauge("fsaudit_redundancy_designed",
              "Member device failures the filesystem or pool survives with every member well (its layout: a "
              "2-way mirror 1, raid1c3 2); only for layouts built to survive at least one.",
              {{"target", target}, {"fs", fs}}, *model.designed_redundancy);
  }
  for (const auto& m : model.bad_members)
    b.gauge("fsaudit_redundancy_member_down",
            "A member device of the filesystem or pool that is down (value 1): offline, faulted, removed, "
            "unavailable or missing, in the filesystem's own word (state).",
            {{"target", target}, {"fs", fs}, {"member", m.name}, {"state", m.state}}, 1);
}

}  // namespace fsaudit::stack
