#pragma once
// XFS health:
//  * `xfs_spaceman -c health <mnt>`: the kernel's record of metadata it found sick, either at
//    runtime (verifiers mark structures sick when they detect corruption) or through online scrub.
//    Lines are "<scope> <metadata>: ok|unhealthy" (xfsprogs spaceman/health.c; scope "filesystem",
//    "AG <n>", "rtgroup <n>", "inode <n>"). "Health status has not been collected" (stderr, exit 0)
//    means nothing was checked yet: not an error.
//  * a shut-down filesystem (after a fatal metadata or log I/O error): xfs_spaceman fails with
//    EIO ("Input/output error") on it.
//  * <sysfs>/fs/xfs/<dev>/error/: how XFS reacts to metadata write errors (max_retries,
//    retry_timeout_seconds per errno class, fail_at_unmount). These are settings, not counts, but
//    "retry forever" (-1) is why a dying disk can hang an XFS mount; exported so it can be alerted on.
//    <sysfs>/fs/xfs/<dev>/stats/stats has performance counters only (no error counters), so it is
//    not exported; XFS error *events* come from the kernel log watcher.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/files.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/xfs/parse.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::xfs {

struct ErrorConfig {
  std::optional<bool> fail_at_unmount;
  // errno class ("EIO", "ENOSPC", "ENODEV", "default") -> value; -1 = forever
  std::map<std::string, std::int64_t> max_retries;
  std::map<std::string, std::int64_t> retry_timeout_seconds;
  // Files that are there but unreadable or not a number (file and errno or text); absent ones are
  // left out.
  std::vector<std::string> problems;
};
ErrorConfig read_error_config(const std::filesystem::path& xfs_dev_dir, const AttributeReader& read = sysfs_reader());

struct Observation {
  std::string device;  // kernel name, "" if the sysfs directory was not found
  std::optional<Health> health;
  bool shutdown = false;
  std::optional<ErrorConfig> error_config;
};
// The error configuration's series and health_collected only with `diagnostic_series` (xfs.detail:
// full); a setting that cannot be read fails the probe either way.
metrics::Batch xfs_metrics(const Target& t, const Observation& o, bool diagnostic_series);

std::unique_ptr<Probe> make_xfs_probe(const config::Config& cfg);

}  // namespace fsaudit::xfs
