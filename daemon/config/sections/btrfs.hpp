#pragma once
// Config section 'btrfs': what the btrfs probe exports beyond health.
//
//   btrfs:
//     detail: compact               # full: also fsaudit_btrfs_nonredundant_used_bytes (per block
//                                   # group type) and fsaudit_btrfs_filesystem_info (the fsid)
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// Both are derived: the used bytes' `profile` label says which cannot self-heal, and the fsid is the
// stack the latency series name (issue 33's budget).
struct BtrfsConfig : DetailConfig {
  bool derived_series() const { return full(); }
};

}  // namespace fsaudit::config
