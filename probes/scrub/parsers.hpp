#pragma once
// Pure parsers for the filesystem-neutral parts of the scrub probe (host I/O load, timer names).
// Each filesystem's scrub output is parsed in its own folder (probes/<fs>/scrub_*).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::scrub {

// ---- host I/O load -----------------------------------------------------------------------------
// <procfs>/pressure/io: "some avg10=1.23 avg60=... avg300=... total=..." -> 1.23 (percent of time).
std::optional<double> parse_pressure_some_avg10(std::string_view text);
// <procfs>/diskstats -> device -> io_ticks (ms spent doing I/O, field 13).
std::map<std::string, std::uint64_t> parse_diskstats_io_ticks(std::string_view text);
// Busiest device's utilisation (percent) between two samples `elapsed_ms` apart.
std::optional<double> diskstats_utilisation(const std::map<std::string, std::uint64_t>& before,
                                            const std::map<std::string, std::uint64_t>& after, double elapsed_ms);

// ---- distro timers -----------------------------------------------------------------------------
// systemd-escape --path: "/" -> "-", "/srv/data-1" -> "srv-data\x2d1".
std::string systemd_escape_path(std::string_view path);

}  // namespace fsaudit::scrub
