#pragma once
// Config section 'zfs': what the ZFS probe exports beyond health.
//
//   zfs:
//     detail: compact               # full: the pool, vdev and scan state sets with every state
//                                   # (0/1), not only the current one
#include <string>

#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct ZfsConfig {
  // A state set with every state costs one series per state and pool or vdev (a pool of 100 disks:
  // 1,000 vdev state series, 900 of them 0); the current state alone says the same (issue 33).
  std::string detail = "compact";  // compact | full

  bool all_states() const { return detail == "full"; }
};

// `s` is the 'zfs' mapping (empty when absent). Reads every key it knows, then s.finish().
ZfsConfig parse_zfs(Section s);

}  // namespace fsaudit::config
