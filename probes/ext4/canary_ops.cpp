#include "probes/ext4/canary_ops.hpp"

namespace fsaudit::ext4 {

canary::PlainRecipe lab_recipe() {
  // Every inode table and the journal are written by mkfs, not later by a kernel thread: the canary
  // cycle is to be the only writer of the device.
  return {[](const std::string& device, const std::string& label) -> std::vector<std::string> {
            return {"mkfs.ext4", "-F", "-q", "-L", label, "-E", "lazy_itable_init=0,lazy_journal_init=0", device};
          },
          [](const canary::LabSpec& spec) { return spec.image_size; }};
}

}  // namespace fsaudit::ext4
