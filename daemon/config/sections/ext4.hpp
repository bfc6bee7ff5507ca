#pragma once
// Config section 'ext4': what the ext4 probe exports beyond health.
//
//   ext4:
//     detail: compact               # full: also fsaudit_ext4_warnings (warnings since mount)
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// Errors and shutdown are health and alerted on; the warning count is a diagnostic no alert reads
// (issue 33's budget: 12 series per filesystem).
struct Ext4Config : DetailConfig {
  bool warning_series() const { return full(); }
};

}  // namespace fsaudit::config
