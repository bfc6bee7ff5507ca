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

// What read_sysfs (probe.hpp) reads of one filesystem under <sysfs>/fs/btrfs/<fsid>/.
struct SysfsDevice {
  std::uint64_t devid = 0;
  std::string name;                 // kernel name ("sda3", "dm-0"), "" when unknown (missing)
  bool missing = false;
  std::optional<DeviceErrors> errors;  // nullopt when error_stats is absent or unreadable
  std::string errors_problem;          // why errors is nullopt
};
struct AllocationProfile {
  std::string type;     // data, metadata, system
  std::string profile;  // single, raid1, ...
  std::uint64_t total_bytes = 0;
  std::uint64_t used_bytes = 0;
};
struct SysfsFilesystem {
  std::string fsid;
  std::vector<std::string> member_names;  // <fsid>/devices/*
  std::vector<SysfsDevice> devices;       // <fsid>/devinfo/*
  std::vector<AllocationProfile> profiles;
  // Attributes that are there but unreadable or junk (file and errno or text): the probe fails
  // with them. Absent ones (older kernels) are left at their defaults.
  std::vector<std::string> problems;
};

// `btrfs filesystem show <mnt>`: the "path /dev/..." of every devid line (the canary's members).
std::vector<std::string> parse_filesystem_show_devices(std::string_view text);

}  // namespace fsaudit::btrfs
