#pragma once
// Config section 'xfs': what the XFS probe exports beyond health.
//
//   xfs:
//     detail: compact               # full: also the metadata error configuration (sysfs error/...),
//                                   # 9 series per filesystem on a current kernel
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// The error configuration is a setting, not a health fact: read it always (an unreadable one fails
// the probe), export it only on request, since it costs 9 series per filesystem (issue 33).
struct XfsConfig : DetailConfig {
  bool error_config_series() const { return full(); }
};

}  // namespace fsaudit::config
