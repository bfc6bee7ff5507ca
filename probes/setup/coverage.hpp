#pragma once
// Detection coverage: a stack signature per filesystem, and whether a canary with the same
// signature (on the configured fields) has recently proven what that stack does with corruption.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/sections/canary.hpp"
#include "daemon/config/sections/setup.hpp"
#include "probes/setup/facts.hpp"
#include "probes/stack/model.hpp"

namespace fsaudit::setup {

// field -> value for every field of config::stack_signature_fields().
using Signature = std::map<std::string, std::string>;

// Redundancy in the canary layout vocabulary: btrfs profiles (single, dup, raid1, ...), ZFS vdev
// layouts (mirror, raidz1, single), bcachefs (replicas, single), XFS/ext4 (plain, md-raid1, lvm-raid).
std::string redundancy_of(const StackFacts& f);
// The same vocabulary for a configured canary layout: the stack model's (probes/stack/model.hpp).
using stack::normalize_layout;

Signature stack_signature(const StackFacts& f);
// A canary's signature: from its live filesystem when `live` is given (mounted), else from its config.
Signature canary_signature(const config::CanaryTarget& c, const StackFacts* live, const std::vector<BlockDevice>& devices,
                           const std::string& kernel_release);

// What the canary probe last recorded (its state file).
struct CanaryProof {
  std::string name;
  Signature signature;
  bool has_run = false;
  bool expectation_met = false;
  std::string verdict, expect;
  double finished = 0;          // Unix seconds of the last cycle
  double interval_seconds = 0;  // the canary's configured interval
};

struct Coverage {
  bool covered = false;
  std::string canary;  // the covering canary
  std::string reason;  // why covered / why not, for logs and `canary suggest`
};

Coverage evaluate_coverage(const Signature& target, const std::vector<CanaryProof>& canaries,
                           const config::SetupConfig& cfg, double now);

// The canary config (YAML, a `canary.canaries` entry with comments) that would cover `f`'s stack.
std::string suggest_canary(const StackFacts& f, const config::SetupConfig& cfg);

}  // namespace fsaudit::setup
