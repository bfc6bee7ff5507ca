#pragma once
// Pure parsers for `bcachefs scrub` / `bcachefs version` output (string in, struct out).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::bcachefs {

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

}  // namespace fsaudit::bcachefs
