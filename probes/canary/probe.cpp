#include "probes/canary/probe.hpp"

#include <cmath>

#include "daemon/core/block_device.hpp"
#include "daemon/core/units.hpp"
#include "probes/canary/helper_protocol.hpp"
#include "probes/canary/journal.hpp"
#include "probes/canary/stack.hpp"

namespace fsaudit::canary {

CanaryProbe::CanaryProbe(config::CanaryConfig cfg, std::string canary) : cfg_(std::move(cfg)), canary_(std::move(canary)) {}

CanarySchedule CanaryProbe::schedule() const {
  const auto* t = cfg_.find(canary_);
  if (!t) return {std::chrono::hours(24), CalendarWindow{}, std::chrono::minutes(30)};
  return {t->interval, t->window, t->timeout};
}

std::optional<ProbeSchedule> CanaryProbe::own_schedule() const {
  auto s = schedule();
  ProbeSchedule p;
  p.interval = s.interval;
  p.jitter = std::chrono::milliseconds(0);
  p.timeout = s.timeout;
  if (!s.window.always) p.window = s.window;
  return p;
}

std::string verdict_meaning(Verdict v) {
  switch (v) {
    case Verdict::repaired: return "the injected corruption was detected and repaired from a good copy";
    case Verdict::detected: return "the injected corruption was detected, but there was no good copy to repair it from";
    case Verdict::silent: return "corrupted data was read back without any error: this stack cannot see bit rot";
    case Verdict::unverified: return "the cycle could not tell whether the corruption was seen";
    case Verdict::not_injectable: return "no copy of the test block could be found on the raw devices to corrupt";
    case Verdict::refused: return "the cycle refused to write (a safety check failed)";
    case Verdict::error: return "the cycle failed before it could reach a verdict";
  }
  return "verdict " + std::string(to_string(v));
}

namespace {

// What the last cycle did, in plain words, for the status page.
std::string cycle_story(const CycleReport& r, const std::string& expect) {
  std::string s = verdict_meaning(r.verdict);
  std::vector<std::string> facts;
  if (r.copies_found || r.verdict != Verdict::error)
    facts.push_back(std::to_string(r.copies_found) + " cop" + (r.copies_found == 1 ? "y" : "ies") +
                    " of the block found on the raw devices");
  if (r.errors_counted_on_read) facts.push_back("the read-back raised the error counters by " + std::to_string(r.errors_counted_on_read));
  if (r.scrub_ran)
    facts.push_back("the scrub found " + std::to_string(r.scrub_found) + " error(s) and repaired " +
                    std::to_string(r.scrub_repaired));
  if (r.time_to_detect_seconds >= 0) facts.push_back("detected " + format_seconds(r.time_to_detect_seconds) + " after the injection");
  if (r.repair_verified == 1) facts.push_back("the bad copy was verified rewritten on disk");
  else if (r.repair_verified == 0) facts.push_back("the bad copy is still bad on disk");
  if ((r.verdict == Verdict::error || r.verdict == Verdict::refused || r.verdict == Verdict::unverified) && !r.reason.empty())
    facts.push_back(r.reason);
  for (std::size_t i = 0; i < facts.size(); ++i) s += (i == 0 ? ": " : "; ") + facts[i];
  s += ".";
  if (!r.expectation_met) s += " This is not what the canary expects (" + expect + ").";
  return s;
}

}  // namespace

metrics::Batch canary_metrics(const config::CanaryTarget& t, const CanaryState& s) {
  metrics::Batch b;
  // Derived from the live stack at each cycle (its model); until a cycle read it, not known.
  std::string expect = !t.expect.empty()                      ? t.expect
                       : s.last && !s.last->expect.empty() ? s.last->expect
                                                              : "unknown";
  metrics::CanaryFacts& facts = b.status.canaries.emplace_back();
  facts.name = t.name;
  facts.fs = t.fs;
  facts.layout = t.layout;
  facts.mountpoint = t.mountpoint;
  facts.expected = expect;
  if (s.last) {
    facts.verdict = std::string(to_string(s.last->verdict));
    facts.expectation_met = s.last->expectation_met;
    facts.last_run = s.last->finished;
    facts.meaning = verdict_meaning(s.last->verdict);
    facts.story = cycle_story(*s.last, expect);
  } else {
    facts.story = "no cycle has finished yet";
  }
  metrics::Labels base{{"target", t.name}, {"fs", t.fs}, {"layout", t.layout}};
  for (const auto& v : verdicts()) {
    auto l = base;
    l["verdict"] = std::string(to_string(v));
    auto it = s.runs.find(l["verdict"]);
    b.counter("fsaudit_canary_runs_total", "Canary cycles by verdict.", l,
              it == s.runs.end() ? 0.0 : static_cast<double>(it->second));
  }
  auto le = base;
  le["expected"] = expect;
  b.info("fsaudit_canary_expected_verdict_info",
         "The verdict this canary's stack is expected to reach: repaired, detected or blind (value 1).", le);
  b.counter("fsaudit_canary_recovered_cycles_total",
            "Interrupted cycles (crash, kill) found at start and cleaned up.", base, static_cast<double>(s.recoveries));
  b.counter("fsaudit_canary_caused_errors_cleared_total",
            "Error counts the canary's own injections caused and then cleared on the canary only.", base,
            static_cast<double>(s.caused_errors_cleared));
  if (!s.last) return b;
  const auto& r = *s.last;
  // The last verdict as a state set with label `verdict` (the name dashboards and alert rules use).
  for (const auto& v : verdicts()) {
    auto l = base;
    l["verdict"] = std::string(to_string(v));
    b.gauge("fsaudit_canary_last_verdict", "Verdict of the last canary cycle (state set: 1 for the current verdict).", l,
            v == r.verdict ? 1.0 : 0.0);
  }
  b.gauge("fsaudit_canary_expectation_met", "1 if the last verdict met the canary's expectation (see expected_verdict_info).",
          le, r.expectation_met ? 1.0 : 0.0);
  b.gauge("fsaudit_canary_last_run_timestamp_seconds", "When the last canary cycle finished (Unix time).", base, r.finished);
  b.gauge("fsaudit_canary_cycle_duration_seconds", "Duration of the last canary cycle.", base, r.duration_seconds);
  b.gauge("fsaudit_canary_copies_found", "Physical copies of the chosen block found on the member devices in the last cycle.",
          base, static_cast<double>(r.copies_found));
  b.gauge("fsaudit_canary_time_to_detect_seconds",
          "Seconds from injection to detection (read or scrub) in the last cycle; NaN when nothing detected.", base,
          r.time_to_detect_seconds >= 0 ? r.time_to_detect_seconds : std::nan(""));
  b.gauge("fsaudit_canary_read_errors_counted", "Error counter increase caused by the read-back in the last cycle.", base,
          static_cast<double>(r.errors_counted_on_read));
  b.gauge("fsaudit_canary_scrub_ran", "1 if the last cycle scrubbed the canary.", base, r.scrub_ran ? 1.0 : 0.0);
  b.gauge("fsaudit_canary_scrub_duration_seconds", "Duration of the canary scrub in the last cycle.", base, r.scrub_seconds);
  b.gauge("fsaudit_canary_scrub_errors_found", "Errors the canary scrub found in the last cycle.", base,
          static_cast<double>(r.scrub_found));
  b.gauge("fsaudit_canary_scrub_errors_repaired", "Errors the canary scrub repaired in the last cycle.", base,
          static_cast<double>(r.scrub_repaired));
  b.gauge("fsaudit_canary_repair_verified",
          "1 if the corrupted copy was verified rewritten on the raw device, 0 if still bad, -1 unknown/not applicable.", base,
          static_cast<double>(r.repair_verified));
  b.gauge("fsaudit_canary_scan_bytes_per_second", "Raw O_DIRECT io_uring pattern-scan throughput in the last cycle.", base,
          r.scan_bytes_per_second());
  b.gauge("fsaudit_canary_scan_bytes", "Bytes scanned on the raw member devices in the last cycle.", base,
          static_cast<double>(r.scan_bytes));
  return b;
}

void canary_identity_metrics(metrics::Batch& b, const config::CanaryTarget& t, const HostPaths& host) {
  b.info("fsaudit_canary_info",
         "A configured injected-corruption canary (value 1): its mount point and ZFS pool (\"\" if none). Errors on "
         "them are caused on purpose: alert rules exclude them.",
         {{"target", t.name}, {"fs", t.fs}, {"layout", t.layout}, {"mountpoint", t.mountpoint}, {"pool", t.pool}});
  for (const auto& d : t.devices)
    b.info("fsaudit_canary_device_info",
           "A member device of a canary (value 1): `device` is the kernel name as the kernel log and btrfs probes "
           "print it, `path` as configured. Errors on it are caused on purpose: alert rules exclude them.",
           {{"target", t.name}, {"device", block::kernel_name_or_target(host, d)}, {"path", d}});
  b.gauge("fsaudit_canary_interval_seconds", "The canary's configured cycle interval.", {{"target", t.name}},
          std::chrono::duration<double>(t.interval).count());
}

metrics::Batch canary_identity_batch(const config::CanaryConfig& cfg, const HostPaths& host) {
  metrics::Batch b;
  for (const auto& t : cfg.canaries) canary_identity_metrics(b, t, host);
  return b;
}

ProbeResult CanaryProbe::run(const Target&, ProbeContext& ctx) {
  try {
    const auto* t = cfg_.find(canary_);
    if (!t) return ProbeResult::not_applicable("canary " + canary_ + " is not configured");
    auto state = load_state(ctx.state_dir, canary_);
    bool pending = std::filesystem::exists(inflight_path(ctx.state_dir, canary_));
    double now = ctx.clock.wall_seconds();
    double interval = std::chrono::duration<double>(t->interval).count();
    // Self-guard against a scheduler that runs us too often (never a corruption loop). Half the
    // interval: the scheduler counts from the start of the previous run, last_run is its end.
    bool due = pending || state.last_run <= 0 || now - state.last_run >= interval / 2;
    if (!pending && due && !t->window.contains(ctx.clock.wall())) due = false;
    due = due || ctx.requested;  // asked for now by root over D-Bus: one cycle, whatever the window
    if (!due) return ProbeResult::ok(canary_metrics(*t, state));
    if (!cfg_.helper.empty()) {
      // Privilege separation: the root-only cycle runs in fsaudit-helper, which checks the name
      // against its own config; this process only records the report.
      auto rep = run_cycle_via_helper(cfg_.helper, canary_, std::max<std::chrono::milliseconds>(ctx.remaining(), std::chrono::minutes(1)));
      if (!rep) return ProbeResult::failed("canary " + canary_ + ": " + rep.error(), canary_metrics(*t, state));
      if (rep->busy) return ProbeResult::failed("canary " + canary_ + ": " + rep->reason, canary_metrics(*t, state));
      state = record_cycle(ctx.state_dir, *rep);
      auto b = canary_metrics(*t, state);
      if (rep->verdict == Verdict::error || rep->verdict == Verdict::refused)
        return ProbeResult::failed("canary " + canary_ + ": " + std::string(to_string(rep->verdict)) + ": " + rep->reason, std::move(b));
      return ProbeResult::ok(std::move(b));
    }
    CycleEnv env(ctx.host, ctx.runner, ctx.tools, ctx.clock, ctx.state_dir, ctx.stop);
    // Commands get at least a minute: cleanup after an injection must finish even near the deadline
    // (the stop token still cancels everything before the injection and the scrub).
    env.command_timeout = std::max<std::chrono::milliseconds>(ctx.remaining(), std::chrono::minutes(1));
    auto report = run_cycle(cfg_, canary_, env);
    if (report.busy)  // another process runs this canary's cycle: nothing ran, nothing to record
      return ProbeResult::failed("canary " + canary_ + ": " + report.reason, canary_metrics(*t, state));
    state = record_cycle(ctx.state_dir, report);
    journal_cycle(report);
    auto b = canary_metrics(*t, state);
    if (report.verdict == Verdict::error || report.verdict == Verdict::refused)
      return ProbeResult::failed("canary " + canary_ + ": " + std::string(to_string(report.verdict)) + ": " + report.reason, std::move(b));
    return ProbeResult::ok(std::move(b));
  } catch (const std::exception& e) {
    return ProbeResult::failed(std::string("canary probe internal error: ") + e.what());
  }
}

std::vector<std::unique_ptr<Probe>> make_canary_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> out;
  for (const auto& c : cfg.canary.canaries) out.push_back(std::make_unique<CanaryProbe>(cfg.canary, c.name));
  return out;
}

std::optional<CanarySchedule> canary_schedule(const Probe& p) {
  if (auto* c = dynamic_cast<const CanaryProbe*>(&p)) return c->schedule();
  return std::nullopt;
}

}  // namespace fsaudit::canary
