#pragma once
// Setup rules: pure judgements over StackFacts. Each rule has an id (label `rule`), a severity, why it
// matters and the fix; a finding adds the evidence from this target. A rule whose facts are unknown
// is reported as not evaluable, never as a finding.
#include <string>
#include <vector>

#include "daemon/config/sections/setup.hpp"
#include "probes/setup/facts.hpp"

namespace fsaudit::setup {

struct RuleInfo {
  std::string id;
  std::string severity;  // critical | warning | info
  std::string title;
  std::string why;
  std::string fix;
};

// Every rule, in report order.
const std::vector<RuleInfo>& rules();
const RuleInfo* find_rule(const std::string& id);

struct Finding {
  std::string rule;
  std::string severity;
  std::string evidence;
};

struct NotEvaluable {
  std::string rule;
  std::string reason;
};

struct Evaluation {
  std::vector<Finding> findings;
  std::vector<NotEvaluable> not_evaluable;
  bool holds(const std::string& rule) const;
};

// The checksumming filesystems (data checksums possible at all).
bool checksumming_fs(const std::string& fs);
// Whether data on this target is checksummed on read (mount options, dataset properties).
std::optional<bool> data_checksummed(const StackFacts& f);

Evaluation evaluate(const StackFacts& f, const config::SetupConfig& cfg);

}  // namespace fsaudit::setup
