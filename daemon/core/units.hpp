#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit {

// "250ms", "30s", "5m", "6h", "7d", "1w", or a bare number of seconds. Combined forms like "1h30m" work.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);
std::string format_duration(std::chrono::milliseconds d);

// For people (the status page, fsauditctl): "1.3 ms", "40 s", "12 min", "5 h", "3 d"; "never" for
// infinity (a scrub that never completed).
std::string format_seconds(double seconds);
// "512 B", "1.5 KiB", "372.5 GiB".
std::string format_bytes(double bytes);

// Config sizes: "4096", "64KiB", "64MiB", "1GiB", "2TiB" (IEC), "64KB"/"1GB" (SI, x1000), "512B".
Result<std::uint64_t> parse_size(std::string_view text);

// Sizes as storage tools print them: "1.05K", "27.9M", "432K", "0B", "12.9T", "1.23GiB", "512.00KiB".
// Single letters and "iB" suffixes are powers of 1024, as zpool and btrfs-progs print them.
Result<double> parse_human_bytes(std::string_view text);

}  // namespace fsaudit
