#include "probes/setup/probe.hpp"

#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/capacity/statfs_helper.hpp"

namespace fsaudit::setup {

namespace fs = std::filesystem;

TargetReport judge_one(StackFacts f, const std::vector<CanaryProof>& canaries, const config::SetupConfig& cfg,
                       double now) {
  TargetReport t;
  auto e = evaluate(f, cfg);
  for (auto& fi : e.findings) {
    if (cfg.silenced(f.target, fi.rule)) t.silenced.push_back(fi);
    else t.eval.findings.push_back(fi);
  }
  t.eval.not_evaluable = std::move(e.not_evaluable);
  t.signature = stack_signature(f);
  t.exempt = cfg.exempt(f.target);
  if (!t.exempt) t.coverage = evaluate_coverage(t.signature, canaries, cfg, now);
  t.facts = std::move(f);
  return t;
}

HostReport judge(std::vector<StackFacts> facts, std::vector<CanaryProof> canaries, const config::SetupConfig& cfg,
                 double now) {
  HostReport r;
  r.canaries = std::move(canaries);
  for (auto& f : facts) r.targets.push_back(judge_one(std::move(f), r.canaries, cfg, now));
  return r;
}

metrics::Batch setup_metrics(const HostReport& r, bool rule_detail) {
  metrics::Batch b;
  double covered = 0, production = 0;
  bool any = false;
  for (const auto& t : r.targets) {
    const auto& target = t.facts.target;
    auto& facts = b.status.fs(target);
    for (const auto& f : t.eval.findings) {
      // Info findings are advice (compression, recordsize, autotrim) that no alert reads, and on a
      // host of 10,000 datasets one each: series with setup.detail: full; the status page and
      // `fsauditd setup` always list them (issue 33).
      if (f.severity != "info" || rule_detail)
        b.gauge("fsaudit_setup_finding",
                "1 while a setup finding holds on the target (rule id, severity); see docs/setup-findings.md.",
                {{"target", target}, {"rule", f.rule}, {"severity", f.severity}}, 1);
      facts.setup_findings.push_back({f.rule, f.severity});
      if (f.severity == "info") continue;
      const auto* ri = find_rule(f.rule);
      std::string words = ri ? ri->title : f.rule;
      if (!f.evidence.empty()) words += " (" + f.evidence + ")";
      if (ri && !ri->fix.empty()) words += ". Fix: " + ri->fix;
      facts.problems.push_back({f.severity == "critical" ? metrics::Severity::critical : metrics::Severity::warning,
                                std::move(words), f.severity == "critical" ? "FsauditSetupCriticalFinding" : ""});
    }
    if (!t.exempt) {
      facts.detection_covered = t.coverage.covered;
      facts.covering_canary = t.coverage.canary;
    }
    for (const auto& f : t.silenced)
      b.gauge("fsaudit_setup_finding_silenced", "1 while a finding holds but is silenced in setup.silence.",
              {{"target", target}, {"rule", f.rule}}, 1);
    // Which rules could not be judged is a diagnostic (setup.detail: full); by default one count per
    // target, only where there is one: zfs-fuse alone left three per dataset (issue 33's budget).
    if (rule_detail)
      for (const auto& n : t.eval.not_evaluable)
        b.gauge("fsaudit_setup_rule_not_evaluable",
                "1 when a setup rule cannot be judged here (property unknown to the tool, facts unreadable).",
                {{"target", target}, {"rule", n.rule}}, 1);
    else if (!t.eval.not_evaluable.empty())
      b.gauge("fsaudit_setup_rules_not_evaluable",
              "Setup rules that cannot be judged on the target (property unknown to the tool, facts unreadable); "
              "which ones: setup.detail: full, or the status page.",
              {{"target", target}}, static_cast<double>(t.eval.not_evaluable.size()));
    metrics::Labels l{{"target", target}};
    for (const auto& [k, v] : t.signature) l[k] = v;
    b.info("fsaudit_stack_info", "The target's stack signature (value 1): what decides whether corruption is seen.", l);
    if (t.exempt) continue;
    b.gauge("fsaudit_detection_covered",
            "1 if a canary with the same stack signature met its expectation within its interval plus grace.",
            {{"target", target}}, t.coverage.covered ? 1 : 0);
    if (t.facts.size_bytes) {
      any = true;
      production += *t.facts.size_bytes;
      if (t.coverage.covered) covered += *t.facts.size_bytes;
    }
  }
  for (const auto& c : r.canaries) {
    metrics::Labels l{{"canary", c.name}};
    for (const auto& [k, v] : c.signature) l[k] = v;
    b.info("fsaudit_canary_stack_info", "A canary's stack signature (value 1), compared with production stacks.", l);
  }
  if (any) {
    b.gauge("fsaudit_detection_production_bytes", "Size of the production filesystems in coverage (statvfs).", {},
            production);
    b.gauge("fsaudit_detection_covered_bytes", "Size of the production filesystems a canary covers.", {}, covered);
    b.gauge("fsaudit_detection_coverage_ratio", "Covered bytes / production bytes on this host.", {},
            production > 0 ? covered / production : 0);
  }
  return b;
}

FindingMap finding_map(const HostReport& r) {
  FindingMap m;
  for (const auto& t : r.targets) {
    auto& row = m[t.facts.target];
    for (const auto& f : t.eval.findings) row[f.rule] = f.severity + "\t" + f.evidence;
  }
  return m;
}

std::vector<FindingEvent> finding_transitions(const FindingMap& before, const FindingMap& after) {
  std::vector<FindingEvent> ev;
  auto make = [](const std::string& target, const std::string& rule, const std::string& v, bool appeared) {
    FindingEvent e;
    e.target = target;
    e.rule = rule;
    auto tab = v.find('\t');
    e.severity = v.substr(0, tab);
    e.evidence = tab == std::string::npos ? "" : v.substr(tab + 1);
    e.appeared = appeared;
    if (const auto* ri = find_rule(rule)) {
      e.why = ri->why;
      e.fix = ri->fix;
    }
    return e;
  };
  static const std::map<std::string, std::string> none;
  for (const auto& [target, rules] : after) {
    auto it = before.find(target);
    const auto& old = it == before.end() ? none : it->second;
    for (const auto& [rule, v] : rules)
      if (!old.count(rule)) ev.push_back(make(target, rule, v, true));
    for (const auto& [rule, v] : old)
      if (!rules.count(rule)) ev.push_back(make(target, rule, v, false));
  }
  for (const auto& [target, rules] : before)
    if (!after.count(target))
      for (const auto& [rule, v] : rules) ev.push_back(make(target, rule, v, false));
  return ev;
}

std::vector<Target> production_targets(const config::Config& cfg, const std::vector<MountEntry>& mounts) {
  return select_targets(mounts, cfg.watched_targets());
}

std::vector<CanaryProof> canary_proofs(const config::Config& cfg, GatherEnv& env) {
  std::vector<CanaryProof> out;
  auto kernel = kernel_release(env.host);
  bool scan = env.scan_nocow;
  env.scan_nocow = false;
  for (const auto& c : cfg.canary.canaries) {
    CanaryProof p;
    p.name = c.name;
    p.interval_seconds = std::chrono::duration<double>(c.interval).count();
    auto st = canary::load_state(env.state_dir, c.name);
    if (st.last) {
      p.has_run = true;
      p.expectation_met = st.last->expectation_met;
      p.verdict = std::string(canary::to_string(st.last->verdict));
      p.expect = st.last->expect;
      p.finished = st.last->finished;
    }
    const MountEntry* live = nullptr;
    for (const auto& m : env.mounts)
      if (m.mountpoint == c.mountpoint) live = &m;
    if (live) {
      Target t{c.name, live->mountpoint, live->fstype, live->source, live->mount_options, live->super_options,
               live->major, live->minor};
      auto f = gather_facts(t, env);
      p.signature = canary_signature(c, &f, {}, kernel);
    } else {
      std::vector<BlockDevice> devs;
      for (const auto& d : c.devices)
        if (auto n = kernel_name_for(env.host, d); !n.empty()) devs.push_back(describe_block(env.host, n, env.mounts));
      p.signature = canary_signature(c, nullptr, devs, kernel);
    }
    out.push_back(std::move(p));
  }
  env.scan_nocow = scan;
  return out;
}

namespace {

FindingMap load_findings(const fs::path& file) {
  FindingMap m;
  auto t = read_file(file);
  if (!t) return m;
  try {
    auto j = nlohmann::json::parse(*t);
    for (auto& [target, rules] : j.items())
      for (auto& [rule, v] : rules.items()) m[target][rule] = v.get<std::string>();
  } catch (const std::exception&) {
    // A damaged file only costs one round of repeated "appeared" records.
  }
  return m;
}

Result<void> save_findings(const fs::path& file, const FindingMap& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [target, rules] : m) {
    if (rules.empty()) continue;
    for (const auto& [rule, v] : rules) j[target][rule] = v;
  }
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  return write_file_atomic(file, j.dump(1) + "\n", 0600);
}

}  // namespace

SetupProbe::SetupProbe(config::Config cfg, FindingSink sink) : cfg_(std::move(cfg)), sink_(std::move(sink)) {}

ProbeResult SetupProbe::run(const Target&, ProbeContext& ctx) {
  try {
    auto table = mount_table(ctx);
    if (!table) return ProbeResult::failed(table.error());
    const auto& mounts = *table;
    GatherEnv env(ctx.host, ctx.runner, ctx.tools, cfg_.setup, ctx.state_dir, *mounts, ctx.clock.wall_seconds(), ctx.stop);
    env.timeout = std::min<std::chrono::milliseconds>(std::chrono::seconds(15), std::max<std::chrono::milliseconds>(
                                                                                     ctx.remaining(), std::chrono::seconds(1)));
    auto targets = production_targets(cfg_, *mounts);
    {
      // Every target's statvfs in one batched round trip to a helper (gather_facts takes the answers),
      // not two wake-ups per target.
      std::vector<std::string> paths;
      for (const auto& t : targets)
        if (!t.mountpoint.empty()) paths.push_back(t.mountpoint);
      capacity::shared_statfs_helpers().prefetch(paths, ctx.stop, ctx.clock,
                                                 std::min(ctx.deadline, ctx.clock.now() + std::chrono::seconds(10)));
    }
    // One target at a time, keeping of its facts only what the series and the findings file read
    // (target, size): every target's devices, properties and layers held at once were the largest
    // part of the daemon's heap at 10,000 filesystems (issue 33), every 15 minutes.
    HostReport report;
    report.canaries = canary_proofs(cfg_, env);
    report.targets.reserve(targets.size());
    for (const auto& t : targets) {
      if (ctx.stop.stop_requested()) return ProbeResult::failed("stopped before all targets were examined");
      auto one = judge_one(gather_facts(t, env), report.canaries, cfg_.setup, env.now);
      StackFacts kept;
      kept.target = std::move(one.facts.target);
      kept.size_bytes = one.facts.size_bytes;
      one.facts = std::move(kept);
      report.targets.push_back(std::move(one));
    }

    std::lock_guard lk(mu_);
    auto file = ctx.state_dir / "setup" / "findings.json";
    auto before = load_findings(file);
    auto after = finding_map(report);
    auto events = finding_transitions(before, after);
    if (!events.empty() || !fs::exists(file)) {
      for (const auto& e : events)
        if (sink_) sink_(e);
      if (auto w = save_findings(file, after); !w)
        return ProbeResult::failed("cannot save setup findings: " + w.error(), setup_metrics(report, cfg_.setup.detail == "full"));
    }
    // Findings of vanished targets were cleared above; with nothing left there is nothing to report.
    if (targets.empty() && cfg_.canary.canaries.empty()) return ProbeResult::not_applicable("no production filesystems");
    return ProbeResult::ok(setup_metrics(report, cfg_.setup.detail == "full"));
  } catch (const std::exception& e) {
    return ProbeResult::failed(std::string("setup probe internal error: ") + e.what());
  }
}

std::unique_ptr<Probe> make_setup_probe(const config::Config& cfg) { return std::make_unique<SetupProbe>(cfg); }

int suggest_cli(const config::Config& cfg, const std::string& target, CommandRunner& runner) {
  auto table = read_mount_table(cfg.host);
  if (!table) {
    std::cerr << "fsauditd canary suggest: " << table.error() << "\n";
    return 1;
  }
  const auto& mounts = *table;
  std::string path = target;
  std::error_code ec;
  if (auto c = fs::canonical(target, ec); !ec) {
    path = c.string();
  } else {
    std::cerr << "fsauditd canary suggest: " << target << ": " << ec.message()
              << " (name a mount point or a path inside the filesystem)\n";
    return 1;
  }
  const MountEntry* m = containing_mount(*mounts, path);
  if (!m) {
    std::cerr << "fsauditd canary suggest: no mounted filesystem holds " << target << "\n";
    return 1;
  }
  Target t{m->mountpoint, m->mountpoint, m->fstype, m->source, m->mount_options, m->super_options, m->major, m->minor};
  GatherEnv env(cfg.host, runner, cfg.tools, cfg.setup, cfg.state_dir, *mounts, SystemClock::instance().wall_seconds());
  env.scan_nocow = false;
  auto f = gather_facts(t, env);
  std::cout << suggest_canary(f, cfg.setup);
  for (const auto& p : f.problems) std::cout << "# note: " << p << "\n";
  auto proofs = canary_proofs(cfg, env);
  auto cov = evaluate_coverage(stack_signature(f), proofs, cfg.setup, env.now);
  std::cout << "# coverage now: " << (cov.covered ? "covered by " : "NOT covered: ") << cov.reason << "\n";
  return 0;
}

}  // namespace fsaudit::setup
