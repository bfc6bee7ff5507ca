#pragma once
// Config section 'btrfs': what the btrfs probe exports beyond health.
//
//   btrfs:
//     detail: compact               # full: also fsaudit_btrfs_nonredundant_used_bytes (per block
//                                   # group type), fsaudit_btrfs_filesystem_info (the fsid), the
//                                   # system block groups, fsaudit_filesystem_data_redundancy, and
//                                   # every member's error counters and missing gauge at 0
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// All are derived or zero: the used bytes' `profile` label says which cannot self-heal, the fsid is the
// stack the latency series name, the stack's layout says whether data repairs, and a member without
// errors is one without error series (issue 33's budget).
struct BtrfsConfig : DetailConfig {};

}  // namespace fsaudit::config
