#pragma once
// A ZFS canary's stack operations (probes/canary_ops/ops.hpp): zpool export / import, leaf vdev
// counters and health from zpool status, the dataset's copies from zfs get, a scrub through the ZFS
// scrub driver's start command and scan parser, zpool clear.
#include "probes/canary_ops/ops.hpp"

namespace fsaudit::zfs {

class CanaryOps final : public canary::CanaryOps {
 public:
  using canary::CanaryOps::CanaryOps;
  bool checksumming() const override { return true; }
  bool lists_members() const override { return true; }
  bool mounted_as_pool() const override { return true; }
  bool allows_file_members() const override { return true; }
  // zpool export writes every dirty block out before the pool goes.
  bool fsync_before_offline() const override { return false; }
  Result<std::vector<std::string>> members() override;
  Result<void> take_offline() override;
  Result<void> bring_online() override;
  Result<canary::Counters> counters() override;
  Result<stack::StackModel> model() override;
  canary::ScrubOutcome scrub() override;
  Result<void> clear_counters() override;
  Result<void> build_lab(canary::LabHost& lab, const canary::LabSpec& spec) override;
};

}  // namespace fsaudit::zfs
