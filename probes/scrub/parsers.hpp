#pragma once
// Pure parsers for the scrub probe (string in, struct out). The ZFS `scan:` block and btrfs
// `scrub status` are parsed by probes/zfs/scan.hpp and probes/btrfs/scrub_status.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::scrub {

// ---- bcachefs scrub ------------------------------------------------------------------------
// No captured `bcachefs scrub` output exists in the fixtures, so this parser is built from the
// table format as bcachefs-tools prints it (cmd_scrub in c_src/cmd_data.c, tools 1.2x-1.33):
//
//   Starting scrub on 2 devices: sda sdb
//   device          checked   corrected uncorrected       total
//   sda              1.00 GiB       0 B        0 B    1.00 GiB 100%  complete
//   sdb            512.00 MiB    4.00 KiB      0 B    1.00 GiB  50%  24.0 MiB/sec
//
// Columns: device name (or "(offline)"), then human-readable sizes checked / corrected /
// uncorrected / total (printed with or without a space before the unit), the percentage, then
// "complete", "offline" or a rate "<size>/sec". The table is redrawn every second in place with
// ANSI escapes ("\033[1A", "\33[2K\r"), so output captured to a file holds every redraw; the last
// row per device wins. Exit status bits: 1 interrupted/error, 2 errors corrected, 4 uncorrected.
struct BcachefsScrubDevice {
  std::string name;
  double checked_bytes = 0, corrected_bytes = 0, uncorrected_bytes = 0, total_bytes = 0;
  int percent = 0;
  std::string state;  // "complete", "offline", "running"
  std::optional<double> rate_bytes_per_second;
};
struct BcachefsScrub {
  std::vector<BcachefsScrubDevice> devices;
  double checked_bytes() const;
  double total_bytes() const;
  double corrected_bytes() const;
  double uncorrected_bytes() const;
  bool complete() const;  // every device complete
};
Result<BcachefsScrub> parse_bcachefs_scrub(std::string_view text);

// `bcachefs version` -> (major, minor); the `scrub` top-level command exists from 1.33 on.
std::optional<std::pair<int, int>> parse_bcachefs_version(std::string_view text);

// ---- xfs_scrub -------------------------------------------------------------------------------
// xfs_scrub's messages ("Corruption: ...", "Unfixable Error: ...", "Info: ...: Optimization is
// possible.", the summary lines "<mnt>: corruptions found: N", "unfixable errors found: N",
// "repairs made: N", "warnings found: N", "NNN.NMiB data found;") and the exit bitmask
// (1 uncorrected errors, 2 optimisations possible, 4 operational error, 8 usage/syntax error).
struct XfsScrubResult {
  std::uint64_t corruption_lines = 0;   // "Corruption:" messages
  std::uint64_t unfixable_lines = 0;    // "Unfixable Error:" messages
  std::uint64_t optimization_lines = 0; // "Optimization is possible" / "Attempting optimization"
  std::uint64_t error_lines = 0;        // "Error:" messages (operational)
  std::optional<std::uint64_t> corruptions_found;  // summary
  std::optional<std::uint64_t> unfixable_found;    // summary
  std::optional<std::uint64_t> repairs_made;       // summary
  std::optional<std::uint64_t> warnings_found;     // summary
  std::optional<std::uint64_t> operational_errors; // "operational errors found: N"
  std::optional<double> data_found_bytes;          // "64.3MiB data found;" (decimal comma accepted)
  bool kernel_unsupported = false;  // the kernel has no online scrub (or no XFS scrub ioctl)
  // Derived counts.
  std::uint64_t uncorrectable() const;  // corruptions left + unfixable errors
  std::uint64_t found() const;          // uncorrectable + repairs made
};
XfsScrubResult parse_xfs_scrub(std::string_view text);

// ---- md ----------------------------------------------------------------------------------------
// <sysfs>/block/mdX/md/sync_completed: "123 / 456" (sectors) or "none".
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_md_sync_completed(std::string_view text);

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
