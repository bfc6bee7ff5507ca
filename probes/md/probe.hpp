#pragma once
// Linux md RAID (host-scope probe): <procfs>/mdstat and <sysfs>/block/md*/md/{array_state,degraded,
// sync_action,mismatch_cnt,...}. md has no checksums: a mismatch found by `check` cannot say which
// copy is right; mismatch_cnt is the only sign of silent divergence.
//
// /proc/mdstat layout (drivers/md/md.c md_seq_show/status_resync, raid1.c/raid5.c status):
//   Personalities : [raid1] [raid6] ...
//   md0 : active raid1 sdb1[1] sda1[0]
//         976630464 blocks super 1.2 [2/2] [UU]
//         [=>...................]  recovery =  8.5% (166106112/1953382464) finish=166.5min speed=178832K/sec
//         bitmap: 0/8 pages [0KB], 65536KB chunk
//   md1 : inactive sdc[0](S)
//   unused devices: <none>
// Member flags: (F) faulty, (S) spare, (W) write-mostly, (J) journal, (R) replacement.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/files.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/md/parse.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::md {

// <sysfs>/block/<md>/md/ values, each optional (files vary by level and kernel).
struct SysfsArray {
  std::string array_state;  // clear, inactive, suspended, readonly, read-auto, clean, active, write-pending, active-idle, broken
  std::optional<std::uint64_t> degraded;
  std::string sync_action;  // idle, resync, recover, check, repair, reshape, frozen
  std::optional<std::uint64_t> mismatch_cnt;  // sectors (512 B) found inconsistent by the last check/repair
  std::string level;
  std::optional<std::uint64_t> raid_disks;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> sync_completed;  // sectors done / total, when running
  // Attributes that are there but unreadable or junk (file and errno or text); absent ones (the
  // level has no such attribute) are left unset.
  std::vector<std::string> problems;
};
SysfsArray read_sysfs_array(const std::filesystem::path& md_dir, const AttributeReader& read = sysfs_reader());

struct Observation {
  std::optional<Mdstat> mdstat;
  std::map<std::string, SysfsArray> sysfs;  // by array name
};
metrics::Batch md_metrics(const Observation& o);

std::unique_ptr<Probe> make_md_probe(const config::Config& cfg);

}  // namespace fsaudit::md
