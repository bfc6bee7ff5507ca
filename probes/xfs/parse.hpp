#pragma once
// Pure parsers for `xfs_spaceman -c health` output and for the health flags of the kernel's geometry
// ioctls: bytes in, struct out. No host access here; the probe (probes/xfs/probe.hpp) makes the calls.
#include <cstddef>
#include <cstdint>
#include <optional>
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

// What XFS_IOC_FSGEOMETRY (v5) and XFS_IOC_AG_GEOMETRY per allocation group report about health, as
// plain numbers (flag values from the kernel's UAPI, xfs_fs.h): the record xfs_spaceman prints.
struct Geometry {
  std::uint32_t flags = 0;              // XFS_FSOP_GEOM_FLAGS_*: which optional btrees exist
  std::uint64_t rtblocks = 0;           // a realtime volume exists when > 0
  std::uint32_t sick = 0, checked = 0;  // XFS_FSOP_GEOM_SICK_*
  struct Ag {
    std::uint32_t sick = 0, checked = 0;  // XFS_AG_GEOM_SICK_*
  };
  std::vector<Ag> ags;
};
// The items xfs_spaceman's default health report lists for `g` ("filesystem <what>", "AG <n>
// <what>"), in its order and wording, so both sources give the same series.
Health health_from_geometry(const Geometry& g);
// The helper's answer (24 bytes of header, 8 per AG): nullopt when the bytes are not one whole answer.
std::string encode_geometry(const Geometry& g);
std::optional<Geometry> decode_geometry(std::string_view bytes);

}  // namespace fsaudit::xfs
