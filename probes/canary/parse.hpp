#pragma once
// Pure parsers of the tool output the canary's stack operations read (probes/canary/stack.hpp
// runs the tools).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::canary {

// `btrfs device stats <mnt>` per device, through probes/btrfs's parser.
struct BtrfsDevStats {
  std::string device;
  std::uint64_t read_io_errs = 0, write_io_errs = 0, flush_io_errs = 0, corruption_errs = 0, generation_errs = 0;
};
Result<std::vector<BtrfsDevStats>> parse_btrfs_device_stats(std::string_view text);

// `btrfs filesystem show <mnt>`: the "path /dev/..." of every devid line.
std::vector<std::string> parse_btrfs_show_devices(std::string_view text);

}  // namespace fsaudit::canary
