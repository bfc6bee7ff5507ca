#include "probes/xfs/canary_ops.hpp"

namespace fsaudit::xfs {

canary::PlainRecipe lab_recipe() {
  return {[](const std::string& device, const std::string& label) -> std::vector<std::string> {
            return {"mkfs.xfs", "-f", "-q", "-L", label, device};
          },
          // canary.lab.xfs_image_size: XFS refuses filesystems below 300 MiB.
          [](const canary::LabSpec& spec) { return spec.xfs_image_size; }};
}

}  // namespace fsaudit::xfs
