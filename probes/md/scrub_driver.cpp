#include "probes/md/scrub_driver.hpp"

#include <fstream>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/md/scrub_output.hpp"

namespace fsaudit::md {

using scrub::DriverEnv;
using scrub::Observation;
using scrub::Outcome;
using scrub::Phase;
using scrub::read_trimmed;
using scrub::ScrubTarget;
using scrub::TargetState;

namespace {

class MdDriver final : public scrub::Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState&, DriverEnv& env) override {
    auto base = env.ctx.host.sys("block/" + t.md + "/md");
    // Absent (an older kernel, no such attribute) may be silent; unreadable or junk fails the run.
    auto action_r = read_trimmed(base / "sync_action");
    if (!action_r) return err(action_r.error());
    if (!*action_r) return err((base / "sync_action").string() + " does not exist");
    const std::string action = **action_r;
    auto degraded = read_trimmed(base / "degraded");
    auto completed = read_trimmed(base / "sync_completed");
    auto last_r = read_trimmed(base / "last_sync_action");
    auto size = read_u64(read_attribute(env.ctx.host.sys("block/" + t.md + "/size")));
    auto mismatch = read_u64(read_attribute(base / "mismatch_cnt"));
    for (const auto* r : {&degraded, &completed, &last_r})
      if (!*r) return err(r->error());
    if (!size) return err(size.error());
    if (!mismatch) return err(mismatch.error());
    const std::string last = last_r->value_or("");
    Observation o;
    o.detail = "sync_action " + action;
    if (action == "check" || action == "repair") o.phase = Phase::running;
    else if (action == "resync" || action == "recover" || action == "reshape") o.resilvering = true;
    o.degraded = degraded->value_or("0") != "0";
    if (*completed) {
      if (auto p = parse_md_sync_completed(**completed); p && p->second > 0 && o.phase == Phase::running) {
        o.progress = static_cast<double>(p->first) / static_cast<double>(p->second);
        o.bytes = static_cast<double>(p->first) * 512;
      }
    }
    if (o.phase == Phase::idle) {
      if (*size) o.bytes = static_cast<double>(**size) * 512;
      if (last == "check" || last == "repair") o.last_outcome = Outcome::finished;
    }
    // mismatch_cnt: sectors found inconsistent by the last check (a repair rewrites them).
    if (*mismatch) {
      o.errors.found = **mismatch;
      o.errors.repaired = action == "repair" || last == "repair" ? **mismatch : 0;
    }
    return o;
  }
  Result<void> start(const ScrubTarget& t, TargetState&, DriverEnv& env) override { return write_action(t, env, "check"); }
  Result<void> cancel(const ScrubTarget& t, TargetState&, DriverEnv& env) override { return write_action(t, env, "idle"); }

 private:
  Result<void> write_action(const ScrubTarget& t, DriverEnv& env, const std::string& what) {
    auto p = env.ctx.host.sys("block/" + t.md + "/md/sync_action");
    std::ofstream f(p);
    if (!f) return err("cannot open " + p.string() + " for writing (needs root)");
    f << what << "\n";
    f.flush();
    if (!f) return err("writing \"" + what + "\" to " + p.string() + " failed");
    return {};
  }
};

}  // namespace

std::unique_ptr<scrub::Driver> make_scrub_driver() { return std::make_unique<MdDriver>(); }

}  // namespace fsaudit::md
