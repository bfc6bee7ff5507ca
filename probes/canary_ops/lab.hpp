#pragma once
// Lab mode (probes/canary/lab.hpp) builds each stack with its filesystem's own recipe,
// CanaryOps::build_lab: mkfs or zpool create, and the mount. The lab itself (a LabHost) makes and
// records every image file, loop device, mount and pool, so that its teardown removes exactly what
// it made and a recipe never decides what is torn down.
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/core/result.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::canary {

// One lab stack, as its recipe reads it (config::LabStack and the lab's sizes, without the config
// reader).
struct LabSpec {
  std::string name;     // the stack: its images and its filesystem label are named after it
  std::string profile;  // btrfs: the data profile; ZFS: the vdev type ("" = plain vdevs)
  int members = 1;      // loop devices (btrfs, XFS, ext4) or file vdevs (ZFS)
  int copies = 1;       // ZFS: the copies property
  std::uint64_t image_size = 0;      // per member: canary.lab.image_size
  std::uint64_t xfs_image_size = 0;  // canary.lab.xfs_image_size (XFS's minimum is larger)
};

class LabHost {
 public:
  virtual ~LabHost() = default;
  virtual CommandResult run(std::vector<std::string> argv, int timeout_s = 120) = 0;
  // A fresh image file `name` in the lab's directory of `size` bytes (never through a symlink),
  // deleted at teardown: its path.
  virtual Result<std::string> image(const std::string& name, std::uint64_t size) = 0;
  // image() on a loop device of its own, detached at teardown: the device.
  virtual Result<std::string> loop_device(const std::string& name, std::uint64_t size) = 0;
  // `mount <options...> <device> <mountpoint>`, unmounted at teardown.
  virtual Result<void> mount(const std::string& device, const std::string& mountpoint,
                             const std::vector<std::string>& options) = 0;
  // ZFS: a zfs-fuse the lab can use (started and later stopped by the lab when none runs); the name
  // of a new pool (fsauditlab<digits>, all a crashed lab's cleanup may destroy); a pool created,
  // destroyed at teardown; and the wait for a pool's root dataset to mount.
  virtual Result<void> start_zfs() = 0;
  virtual std::string new_pool_name() = 0;
  virtual void created_pool(const std::string& pool) = 0;
  virtual Result<void> wait_mounted(const std::string& mountpoint) = 0;
};

}  // namespace fsaudit::canary
