#pragma once
// Config section 'xfs': what the XFS probe exports beyond health.
//
//   xfs:
//     detail: compact               # full: also the metadata error configuration (sysfs error/...),
//                                   # 9 series per filesystem on a current kernel
#include <string>

#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct XfsConfig {
  // The error configuration is a setting, not a health fact: read it always (an unreadable one fails
  // the probe), export it only on request, since it costs 9 series per filesystem (issue 33).
  std::string detail = "compact";  // compact | full

  bool error_config_series() const { return detail == "full"; }
};

// `s` is the 'xfs' mapping (empty when absent). Reads every key it knows, then s.finish().
XfsConfig parse_xfs(Section s);

}  // namespace fsaudit::config
