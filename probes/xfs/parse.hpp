#pragma once
// Pure parsers for `xfs_spaceman -c health` output: text in, struct out. No host access here; the
// probe (probes/xfs/probe.hpp) reads the files and runs the tools.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::xfs {

struct HealthItem {
  std::string scope;     // "filesystem", "ag", "rtgroup", "inode", or "path" (file arguments)
  std::string index;     // AG/rtgroup/inode number, or the path; "" for filesystem
  std::string metadata;  // "summary counters", "superblock", "inode btree", ...
  bool healthy = true;
};
struct Health {
  bool collected = false;  // false: "Health status has not been collected"
  std::vector<HealthItem> items;
  std::size_t unhealthy() const;
};
// stdout and stderr of xfs_spaceman -c health, concatenated.
Result<Health> parse_spaceman_health(std::string_view text);

}  // namespace fsaudit::xfs
