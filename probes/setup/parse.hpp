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
#include "probes/zfs/properties.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::setup {

// `zfs get` / `zpool get` tables: ZFS's parser (probes/zfs/properties.hpp).
using zfs::PropertyTable;
using zfs::parse_property_table;

// "95.5M" / "100052992" -> bytes; "-" or garbage -> nullopt.
std::optional<double> property_bytes(std::string_view v);
// "44%" / "44" -> 44.
std::optional<double> property_percent(std::string_view v);

// The filesystem type as the setup rules name it: "fuse.zfs" (zfs-fuse) -> "zfs".
std::string normalize_fs(const std::string& fstype);

struct ZfsLayout {
  std::vector<std::string> leaves;  // leaf vdev names of data/special/dedup/log vdevs
};
// The leaves of the pool's data/special/dedup/log vdevs, for the stacked check. (What the vdevs
// make of the pool is its stack model: probes/zfs/stack.hpp.)
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
