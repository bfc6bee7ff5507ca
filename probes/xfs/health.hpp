#pragma once
// XFS health read straight from the kernel, in a statfs helper process: XFS_IOC_FSGEOMETRY (the
// filesystem's sick/checked flags) and XFS_IOC_AG_GEOMETRY per allocation group, the record
// `xfs_spaceman -c health` prints. A process per XFS filesystem per interval cost about 12 ms of CPU
// each (xfs_spaceman reads the whole mount table); the ioctls cost microseconds. They read the AG
// headers, which can block on a hung device: so they run in a helper process, like statvfs, never
// on a daemon thread. xfs_spaceman stays the fallback where the kernel lacks them (before 5.2).
#include <cerrno>
#include <string>

#include "probes/capacity/statfs_helper.hpp"
#include "probes/xfs/parse.hpp"

namespace fsaudit::xfs {

// The helper call's number (capacity::HelperCallRegistration).
constexpr std::uint8_t kGeometryCall = 1;

// Errno from the helper, or a failure to ask it at all (`error` set, errno 0).
struct HealthRead {
  std::optional<Health> health;
  int err = 0;        // EIO: the filesystem is shut down
  std::string error;  // what failed, for the probe's reason
  // The kernel cannot answer this way (old kernel, no such ioctl, too many AGs for one answer):
  // ask xfs_spaceman. Never for a shut-down filesystem or a helper that could not answer.
  bool use_fallback() const {
    return !health && (err == ENOTTY || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == ERANGE);
  }
};

HealthRead read_health(capacity::StatfsHelpers& helpers, const std::string& mountpoint, const std::stop_token& stop,
                       const Clock& clock, SteadyTime deadline);

}  // namespace fsaudit::xfs
