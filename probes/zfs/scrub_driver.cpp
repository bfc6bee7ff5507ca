#include "probes/zfs/scrub_driver.hpp"

#include <cmath>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

using namespace fsaudit::scrub;  // the driver interface's types
using scrub::Outcome;           // not fsaudit::Outcome (a probe run's)

namespace {

class ZfsDriver final : public scrub::Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    Observation o;
    if (auto seen = env.discovered.find(t.key()); seen != env.discovered.end()) {
      o = std::move(seen->second);
      env.discovered.erase(seen);
    } else {
      auto r = scrub::run_command(env, {env.ctx.tool("zpool"), "status", t.pool});
      if (!r.ok()) return err_in("zpool status " + t.pool + ": ", r);
      auto parsed = observation_from_zpool_status(r.out);
      if (!parsed) return err("zpool status " + t.pool + ": " + parsed.error());
      o = *parsed;
    }
    if (o.phase == Phase::idle && o.last_outcome == Outcome::finished) {
      // A finished scrub read every allocated byte: the pool's allocation is the amount scrubbed. Asked
      // once per scrub: later polls of the same finished scrub reuse what its record holds (a zpool
      // process every 30 s per pool was a visible part of a large host's cost).
      if (st.last.bytes && o.last_end && std::abs(*o.last_end - st.last.end) <= 1) {
        o.bytes = st.last.bytes;
        return o;
      }
      auto l = scrub::run_command(env, {env.ctx.tool("zpool"), "list", "-H", "-o", "allocated", t.pool});
      if (l.ok()) {
        if (auto b = parse_human_bytes(trim(l.out))) o.bytes = *b;
      }
    }
    return o;
  }

  Result<void> start(const ScrubTarget& t, TargetState&, DriverEnv& env) override {
    auto r = scrub::run_command(env, scrub_start_argv(env.ctx.tool("zpool"), t.pool));
    if (!r.ok()) return err_in("zpool scrub " + t.pool + ": ", r);
    return {};
  }
  bool can_pause(const TargetState& st) const override { return !st.pause_unsupported; }
  Result<void> pause(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    auto r = scrub::run_command(env, {env.ctx.tool("zpool"), "scrub", "-p", t.pool});
    if (r.ok()) return {};
    std::string text = to_lower(r.err + r.out);
    if (text.find("invalid option") != std::string::npos || text.find("usage") != std::string::npos) {
      st.pause_unsupported = true;  // zfs-fuse's zpool: feature detected by trying
      return err("this zpool cannot pause a scrub (no 'zpool scrub -p')");
    }
    return err_in("zpool scrub -p " + t.pool + ": ", r);
  }
  Result<void> resume(const ScrubTarget& t, TargetState& st, DriverEnv& env) override { return start(t, st, env); }
  Result<void> cancel(const ScrubTarget& t, TargetState&, DriverEnv& env) override {
    auto r = scrub::run_command(env, {env.ctx.tool("zpool"), "scrub", "-s", t.pool});
    if (!r.ok()) return err_in("zpool scrub -s " + t.pool + ": ", r);
    return {};
  }
};

}  // namespace

std::vector<std::string> scrub_start_argv(const std::string& zpool, const std::string& pool) {
  return {zpool, "scrub", pool};
}

Result<Observation> observation_from_zpool_status(std::string_view text) {
  auto rep = parse_zpool_status(text);
  if (!rep) return err(rep.error());
  if (rep->pools.empty()) return err("zpool status printed no pool");
  return observation_from_pool(rep->pools.front());
}

Observation observation_from_pool(const ZfsPoolStatus& pool) {
  Observation o;
  o.degraded = !pool.state.empty() && pool.state != "ONLINE";
  const auto& scan = pool.scan;
  o.detail = scan.text;
  if (!scan.recognized) o.detail = "unrecognised scan text: " + o.detail;
  bool scrub = scan.function == ScanFunction::scrub || scan.function == ScanFunction::error_scrub;
  if (scan.function == ScanFunction::resilver && scan.state == ScanState::in_progress) o.resilvering = true;
  if (!scrub) return o;
  if (scan.start_time) o.started = static_cast<double>(*scan.start_time);
  switch (scan.state) {
    case ScanState::in_progress: o.phase = Phase::running; break;
    case ScanState::paused: o.phase = Phase::paused; break;
    case ScanState::finished: o.last_outcome = Outcome::finished; break;
    case ScanState::canceled: o.last_outcome = Outcome::canceled; break;
    case ScanState::none: break;
  }
  if (scan.end_time) o.last_end = static_cast<double>(*scan.end_time);
  o.last_duration = scan.duration_seconds;
  if (!o.started && o.last_end && o.last_duration) o.started = *o.last_end - *o.last_duration;
  o.progress = scan.progress_ratio;
  if (o.phase == Phase::running)
    o.rate = scan.issue_rate_bytes_per_second ? scan.issue_rate_bytes_per_second : scan.scan_rate_bytes_per_second;
  o.repaired_bytes = scan.repaired_bytes;
  if (o.phase != Phase::idle) o.bytes = scan.issued_bytes ? scan.issued_bytes : scan.examined_bytes;
  if (scan.errors) {
    // "with N errors" are the errors the scrub could not repair. A count of repaired blocks is not
    // printed (only repaired bytes), so found/repaired counts are known only when nothing was repaired.
    o.errors.uncorrectable = *scan.errors;
    if (scan.repaired_bytes.value_or(0) == 0) {
      o.errors.found = *scan.errors;
      o.errors.repaired = 0;
    }
  }
  return o;
}

std::unique_ptr<scrub::Driver> make_scrub_driver() { return std::make_unique<ZfsDriver>(); }

}  // namespace fsaudit::zfs
