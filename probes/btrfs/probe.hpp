#pragma once
// btrfs health: per-device error counters, missing devices, block-group profiles (can the data heal
// itself?). The last scrub's own counts are the scrub probe's (fsaudit_scrub_*{fs="btrfs"}, through
// scrub_driver.hpp): one command and one metric family for scrubs of every filesystem.
//
// Sources, in order of preference:
//  * <sysfs>/fs/btrfs/<fsid>/devinfo/<devid>/{error_stats,missing}  (kernel >= 5.14)
//  * `btrfs device stats <mnt>` when error_stats is absent (older kernels)
//  * <sysfs>/fs/btrfs/<fsid>/allocation/{data,metadata,system}/<profile>/{total,used}_bytes
//
// The mount is mapped to its fsid by its source device: the kernel name of `source` (symlinks such
// as /dev/mapper/x resolved under devfs) is looked up in <fsid>/devices/, then by major:minor
// (<fsid>/devices/<name>/dev). devid -> device name comes from the btrfs superblock of each member
// (dev_item.devid), since sysfs has no link between devinfo/<devid> and devices/<name>.
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/btrfs/parse.hpp"
#include "probes/btrfs/scrub_status.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::btrfs {

// What stays true while a filesystem stays mounted, kept between runs so that a run reads only what
// can change (counters, missing, allocation): which fsid a mount source has (found by listing every
// btrfs in sysfs, so each run cost grew with the host's btrfs count) and which member is which devid
// (each member's superblock). Each use is checked against sysfs first: the matched member's
// directory must still be there, the member list must be the same; an unmount, replace or reformat
// is seen on the next run. Thread-safe; at most kMaxEntries of each (then it starts over).
class SysfsMemo {
 public:
  static constexpr std::size_t kMaxEntries = 4096;
  struct Fsid {
    std::string fsid, member;  // member: the <fsid>/devices/ entry that matched the source
  };
  std::optional<Fsid> fsid_of(const std::string& source) const;
  void remember_fsid(const std::string& source, Fsid f);
  // Every member device seen by the last full scan of <sysfs>/fs/btrfs, by name: the next source
  // named like one is found without a scan.
  std::optional<Fsid> fsid_of_member(const std::string& member) const;
  void remember_members(const std::vector<std::pair<std::string, std::string>>& fsid_member);
  std::optional<std::map<std::uint64_t, std::string>> names_of(const std::string& fsid,
                                                               const std::vector<std::string>& members) const;
  void remember_names(const std::string& fsid, std::vector<std::string> members, std::map<std::uint64_t, std::string> names);
  void note_saved() const;
  std::size_t lookups_saved() const;  // for tests: lookups answered from memory

 private:
  mutable std::mutex mu_;
  std::map<std::string, Fsid> fsids_;
  std::map<std::string, std::string> members_;  // member name -> fsid
  std::map<std::string, std::pair<std::vector<std::string>, std::map<std::uint64_t, std::string>>> names_;
  mutable std::size_t saved_ = 0;
};

// The fsid directory under <sysfs>/fs/btrfs for a mount whose source is `source`.
Result<std::string> find_fsid(const HostPaths& host, const std::string& source, SysfsMemo* memo = nullptr);
// Reads one filesystem's sysfs tree. devid -> name via member superblocks under host.devfs.
Result<SysfsFilesystem> read_sysfs(const HostPaths& host, const std::string& fsid, SysfsMemo* memo = nullptr);
// dev_item.devid of the btrfs superblock in `device` (64 KiB in), checked against `fsid`.
Result<std::uint64_t> read_superblock_devid(const std::filesystem::path& device, const std::string& fsid);

// Everything one run gathered; any part may be missing.
struct Observation {
  std::optional<SysfsFilesystem> sysfs;
  std::optional<std::vector<DeviceStatsEntry>> device_stats;  // fallback for the counters
};
// Pure: the metrics for `target` from what was observed. With `full` (btrfs.detail: full) also
// fsaudit_btrfs_nonredundant_used_bytes, fsaudit_btrfs_filesystem_info, the system block groups,
// fsaudit_filesystem_data_redundancy, and error counters and missing gauges that are 0.
metrics::Batch btrfs_metrics(const Target& target, const Observation& obs, bool full = false);

std::unique_ptr<Probe> make_btrfs_probe(const config::Config& cfg);

}  // namespace fsaudit::btrfs
