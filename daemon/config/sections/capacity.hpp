#pragma once
// Config section 'capacity': what the capacity probe exports beyond what alerts and plans read.
//
//   capacity:
//     detail: compact               # full: also fsaudit_filesystem_free_bytes (free including
//                                   # root's reserve), one series per filesystem
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// Alerts and capacity plans read the bytes available to users; free bytes differ only by root's
// reserve (issue 33's budget: 12 series per filesystem).
struct CapacityConfig : DetailConfig {
  bool free_bytes_series() const { return full(); }
};

}  // namespace fsaudit::config
