#pragma once
// A btrfs canary's stack operations (probes/canary_ops/ops.hpp): umount / mount with its other
// members as device= options, `btrfs device stats` counters, health from sysfs, and a scrub through
// the btrfs scrub driver's start command and scrub status parser.
#include "probes/canary_ops/ops.hpp"

namespace fsaudit::btrfs {

class CanaryOps final : public canary::CanaryOps {
 public:
  using canary::CanaryOps::CanaryOps;
  bool checksumming() const override { return true; }
  bool lists_members() const override { return true; }
  Result<std::vector<std::string>> members() override;
  Result<void> take_offline() override;
  Result<void> bring_online() override;
  Result<canary::Counters> counters() override;
  Result<stack::StackModel> model() override;
  canary::ScrubOutcome scrub() override;
  Result<void> clear_counters() override;
  Result<void> build_lab(canary::LabHost& lab, const canary::LabSpec& spec) override;

 private:
  struct ScrubRun {
    CommandResult start;       // `btrfs scrub start -B -R`
    std::string final_status;  // `btrfs scrub status -d -R` once it said final, when start was stopped
  };
  ScrubRun run_scrub();
};

}  // namespace fsaudit::btrfs
