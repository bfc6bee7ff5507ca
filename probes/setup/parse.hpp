#pragma once
// Pure parsers for the setup probe: property tables of `zfs get` / `zpool get`, and the ZFS layout
// judgement over the zfs probe's `zpool status` parse. No I/O.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::setup {

// name -> property -> value, from `zfs get -Hp ...` / `zpool get -Hp all POOL` (tab separated, no
// header) or the plain form with a "NAME PROPERTY VALUE SOURCE" header (zfs-fuse's zpool get). A
// value "-" is kept as "-". Text that is neither is an error.
using PropertyTable = std::map<std::string, std::map<std::string, std::string>>;
Result<PropertyTable> parse_property_table(std::string_view text);

// "95.5M" / "100052992" -> bytes; "-" or garbage -> nullopt.
std::optional<double> property_bytes(std::string_view v);
// "44%" / "44" -> 44.
std::optional<double> property_percent(std::string_view v);

// The filesystem type as the setup rules name it: "fuse.zfs" (zfs-fuse) -> "zfs".
std::string normalize_fs(const std::string& fstype);

struct ZfsLayout {
  std::vector<std::string> data_vdev_layouts;  // mirror, raidz2, disk, file, ...
  std::vector<std::string> leaves;             // leaf vdev names of data/special/dedup/log vdevs
};
// Top-level data vdevs (role data/special/dedup) and their layout; leaves for the stacked check.
ZfsLayout zfs_layout(const zfs::ZfsPoolStatus& pool);

// One /proc/spl/kstat/zfs/<pool>/objset-0x<id> file (OpenZFS 0.8+ on Linux): the dataset's write()
// calls and bytes since import, i.e. the application's write size on that dataset.
struct ObjsetIo {
  std::string dataset;
  std::uint64_t writes = 0, nwritten = 0;
};
Result<ObjsetIo> parse_objset_kstat(std::string_view text);

// The dataset a ZFS mount source names ("tank/vm", "tank/vm@snap" -> "tank/vm") and its pool.
std::string zfs_pool_of(const std::string& dataset);

}  // namespace fsaudit::setup
