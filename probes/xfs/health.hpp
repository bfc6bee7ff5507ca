#pragma once
// XFS health read straight from the kernel: XFS_IOC_FSGEOMETRY (the filesystem's sick/checked
// flags) and XFS_IOC_AG_GEOMETRY per allocation group, the same record `xfs_spaceman -c health`
// prints. xfs_spaceman reads and parses the whole mount table on every start, so running it per XFS
// filesystem per interval grew with the number of mounts (on a host with 1,000 mounts it was a
// twelfth of fsauditd's CPU); two ioctls per AG cost nothing of the kind. xfs_spaceman stays the
// fallback where the kernel lacks the health ioctls (before Linux 5.2).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "probes/xfs/parse.hpp"

namespace fsaudit::xfs {

// What the two ioctls report, as plain numbers (the flag values are the kernel's UAPI, xfs_fs.h).
struct Geometry {
  std::uint32_t flags = 0;       // XFS_FSOP_GEOM_FLAGS_*: which optional btrees exist
  std::uint64_t rtblocks = 0;    // a realtime volume exists when > 0
  std::uint32_t sick = 0, checked = 0;  // XFS_FSOP_GEOM_SICK_*
  struct Ag {
    std::uint32_t sick = 0, checked = 0;  // XFS_AG_GEOM_SICK_*
  };
  std::vector<Ag> ags;
};

// Pure: the items xfs_spaceman's default health report lists for `g` ("filesystem <what>",
// "AG <n> <what>"), in its order and wording, so both sources give the same series.
Health health_from_geometry(const Geometry& g);

struct HealthRead {
  std::optional<Health> health;
  // errno when there is no health: EIO = shut down; ENOTTY/EINVAL = no ioctl; ETIMEDOUT = no answer
  // in time, EBUSY = an earlier read of this mount point is still blocked (read_health_within).
  int err = 0;
  std::string error;  // what failed, for the probe's reason
  // The kernel cannot answer this way (old kernel, not XFS, no such path): ask xfs_spaceman. Not
  // for a shut-down or hung filesystem, where xfs_spaceman would hang or fail the same way.
  bool use_fallback() const { return !health && err != EIO && err != ETIMEDOUT && err != EBUSY; }
};
HealthRead read_health(const std::filesystem::path& mountpoint);

// `read` (read_health) of `mountpoint` on its own thread, waited for at most `timeout`: the ioctls
// read AG headers, and on a hung device that blocks in the kernel; it then holds that thread, not
// the probe's worker, and until it returns, later calls for the same mount point start no other
// thread and answer EBUSY (in-process, the way a forked helper protects statfs).
HealthRead read_health_within(const std::filesystem::path& mountpoint, std::chrono::milliseconds timeout,
                              const std::function<HealthRead(const std::filesystem::path&)>& read = read_health);

}  // namespace fsaudit::xfs
