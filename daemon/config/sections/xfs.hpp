#pragma once
// Config section 'xfs': what the XFS probe exports beyond health.
//
//   xfs:
//     detail: compact               # full: also the metadata error configuration (sysfs error/...),
//                                   # 9 series per filesystem on a current kernel, and
//                                   # fsaudit_xfs_health_collected
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// The error configuration is a setting, not a health fact: read it always (an unreadable one fails
// the probe), export it only on request, since it costs 9 series per filesystem (issue 33). Whether
// health was collected yet says only how much unhealthy_metadata's 0 is worth: a diagnostic too.
struct XfsConfig : DetailConfig {
  bool diagnostic_series() const { return full(); }
};

}  // namespace fsaudit::config
