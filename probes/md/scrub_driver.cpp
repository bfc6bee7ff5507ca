#include "probes/md/scrub_driver.hpp"

#include <fstream>

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
    auto action = read_trimmed(base / "sync_action");
    if (!action) return err("cannot read " + (base / "sync_action").string());
    Observation o;
    o.detail = "sync_action " + *action;
    if (*action == "check" || *action == "repair") o.phase = Phase::running;
    else if (*action == "resync" || *action == "recover" || *action == "reshape") o.resilvering = true;
    o.degraded = read_trimmed(base / "degraded").value_or("0") != "0";
    if (auto sc = read_trimmed(base / "sync_completed")) {
      if (auto p = parse_md_sync_completed(*sc); p && p->second > 0 && o.phase == Phase::running) {
        o.progress = static_cast<double>(p->first) / static_cast<double>(p->second);
        o.bytes = static_cast<double>(p->first) * 512;
      }
    }
    if (o.phase == Phase::idle) {
      if (auto size = read_trimmed(env.ctx.host.sys("block/" + t.md + "/size")))
        if (auto s = parse_u64(*size)) o.bytes = static_cast<double>(*s) * 512;
      auto last = read_trimmed(base / "last_sync_action").value_or("");
      if (last == "check" || last == "repair") o.last_outcome = Outcome::finished;
    }
    // mismatch_cnt: sectors found inconsistent by the last check (a repair rewrites them).
    if (auto m = read_trimmed(base / "mismatch_cnt"); m && parse_u64(*m)) {
      o.errors.found = *parse_u64(*m);
      bool repair = *action == "repair" || read_trimmed(base / "last_sync_action").value_or("") == "repair";
      o.errors.repaired = repair ? *o.errors.found : 0;
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
