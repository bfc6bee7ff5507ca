#pragma once
// Config section 'zfs': what the ZFS probe exports beyond health.
//
//   zfs:
//     detail: compact               # full: the pool, vdev and scan state sets with every state
//                                   # (0/1), not only the current one; the pool row's error
//                                   # counters; zpool list's FREE, CAP and DEDUP
#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

// A state set with every state costs one series per state and pool or vdev (a pool of 100 disks:
// 1,000 vdev state series, 900 of them 0); the current state alone says the same (issue 33). The
// pool row's counters repeat its vdevs' (which are exported), FREE and CAP are SIZE and ALLOC again.
struct ZfsConfig : DetailConfig {
  bool full_detail() const { return full(); }
};

}  // namespace fsaudit::config
