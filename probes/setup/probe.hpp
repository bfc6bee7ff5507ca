#pragma once
// The "setup" probe (host scope, every few minutes): gathers stack facts for every production
// target, evaluates the setup rules, logs findings that appear or clear, and decides which targets a
// canary covers. Metrics:
//   fsaudit_setup_finding{target,rule,severity} 1 while a finding holds (not for silenced ones)
//   fsaudit_setup_finding_silenced{target,rule} 1, fsaudit_setup_rules_not_evaluable{target} N (> 0 only),
//   with setup.detail: full fsaudit_setup_rule_not_evaluable{target,rule} 1 instead
//   fsaudit_stack_info{target,fs,data_checksums,redundancy,compression,kernel_release,device_model,device_transport} 1
//   fsaudit_canary_stack_info{canary,...same fields} 1
//   fsaudit_detection_covered{target} 0/1, fsaudit_detection_coverage_ratio,
//   fsaudit_detection_covered_bytes, fsaudit_detection_production_bytes
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/setup/coverage.hpp"
#include "probes/setup/gather.hpp"
#include "probes/setup/journal.hpp"
#include "probes/setup/rules.hpp"

namespace fsaudit::setup {

struct TargetReport {
  StackFacts facts;
  Evaluation eval;                 // findings already without the silenced ones
  std::vector<Finding> silenced;
  Signature signature;
  bool exempt = false;             // left out of coverage (setup.coverage.exempt)
  Coverage coverage;
};

struct HostReport {
  std::vector<TargetReport> targets;
  std::vector<CanaryProof> canaries;
};

// Pure: one target's facts -> its evaluation, silencing and coverage.
TargetReport judge_one(StackFacts facts, const std::vector<CanaryProof>& canaries, const config::SetupConfig& cfg,
                       double now);
// Pure: facts -> evaluation, silencing and coverage for every target.
HostReport judge(std::vector<StackFacts> facts, std::vector<CanaryProof> canaries, const config::SetupConfig& cfg,
                 double now);
metrics::Batch setup_metrics(const HostReport& r, bool rule_detail);

// target -> rule -> "severity\tevidence": what held at the last run (persisted in the state dir).
using FindingMap = std::map<std::string, std::map<std::string, std::string>>;
FindingMap finding_map(const HostReport& r);
// The appear/clear events between two runs. Targets that vanished clear their findings.
std::vector<FindingEvent> finding_transitions(const FindingMap& before, const FindingMap& after);

// Gathers the canaries' proofs (state files) and signatures (live filesystem, else config).
std::vector<CanaryProof> canary_proofs(const config::Config& cfg, GatherEnv& env);
// The production targets of this host: mountinfo through the target selection, canaries left out.
std::vector<Target> production_targets(const config::Config& cfg, const std::vector<MountEntry>& mounts);

class SetupProbe final : public Probe {
 public:
  explicit SetupProbe(config::Config cfg, FindingSink sink = journal_finding);
  std::string name() const override { return "setup"; }
  Scope scope() const override { return Scope::host; }
  bool reads_other_probes() const override { return true; }  // scrub state, canary records
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

 private:
  config::Config cfg_;
  FindingSink sink_;
  std::mutex mu_;
};

std::unique_ptr<Probe> make_setup_probe(const config::Config& cfg);

// `fsauditd canary suggest TARGET [--config FILE]`: prints the canary config that would cover the
// stack of the filesystem holding TARGET. Returns the exit code.
int suggest_cli(const config::Config& cfg, const std::string& target, CommandRunner& runner);

}  // namespace fsaudit::setup
