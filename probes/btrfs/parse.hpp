#pragma once
// Pure parsers for btrfs tool output and sysfs text: string_view in, struct out. No host access
// here; the probe (probes/btrfs/probe.hpp) reads the files and runs the tools.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::btrfs {

struct DeviceErrors {
  std::uint64_t write = 0, read = 0, flush = 0, corruption = 0, generation = 0;
};

// <sysfs>/fs/btrfs/<fsid>/devinfo/<devid>/error_stats: "write_errs N" ... "generation_errs N".
// A value "invalid" (stats not yet loaded) is an error.
Result<DeviceErrors> parse_error_stats(std::string_view text);

struct DeviceStatsEntry {
  std::string device;  // as printed: "/dev/sda3", "/dev/mapper/root", "<missing disk>"
  std::optional<std::uint64_t> devid;  // only the tabular (-T) form prints it
  DeviceErrors errors;
};
// `btrfs device stats [-c] <mnt>`: "[/dev/x].write_io_errs N" lines, or the tabular -T form.
Result<std::vector<DeviceStatsEntry>> parse_device_stats(std::string_view text);

// Block-group profile names as sysfs spells them: single, dup, raid0, raid1, raid1c3, raid1c4,
// raid10, raid5, raid6. True where a bad copy can be rebuilt from another copy or from parity.
bool profile_is_redundant(std::string_view profile);
// How many member devices (or bad copies) the profile survives: raid1/raid10/raid5/dup 1,
// raid1c3/raid6 2, raid1c4 3, single/raid0 0.
int profile_spare_copies(std::string_view profile);

}  // namespace fsaudit::btrfs
