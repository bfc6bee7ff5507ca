#pragma once
// Capacity of every target from statvfs(2): bytes and inodes. statvfs on a dead network or FUSE mount
// can hang forever: it runs in a helper process (statfs_helper.hpp), so the hang holds that process,
// never a daemon thread in the kernel; the scheduler's deadline and stuck handling report it.
#include <memory>
#include <sys/statvfs.h>

#include "daemon/probe/probe.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::capacity {

struct CapacityStats {
  double size_bytes = 0, free_bytes = 0, avail_bytes = 0;
  double files = 0, files_free = 0;
};

// Pure: converts what statvfs returned.
CapacityStats capacity_from_statvfs(const struct statvfs& s);
// fsaudit_filesystem_free_bytes only with `free_bytes_series` (capacity.detail: full).
metrics::Batch capacity_metrics(const Target& t, const CapacityStats& c, bool free_bytes_series = false);

std::unique_ptr<Probe> make_capacity_probe(const config::Config& cfg);

}  // namespace fsaudit::capacity
