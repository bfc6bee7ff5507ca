#pragma once
// Pure parsers for bcachefs sysfs files (io_errors, counters, state, errors): text in, struct
// out. No host access here; the probe (probes/bcachefs/probe.hpp) reads the files.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit::bcachefs {

struct IoErrors {
  std::map<std::string, std::uint64_t> since_creation;  // read, write, checksum (and any new kinds)
  std::map<std::string, std::uint64_t> since_reset;     // the second section
  std::string reset_age;                                // "7 y" from "IO errors since 7 y ago"
};
// A section without counters, a counter that is not a number, or text ending inside a line (cut
// short) is an error.
Result<IoErrors> parse_io_errors(std::string_view text);

struct Counter {
  double since_mount = 0;
  double since_creation = 0;
};
Result<Counter> parse_counter(std::string_view text);

// "[rw] ro evacuating failed spare" -> "rw"; a bare "rw" -> "rw".
std::string parse_state(std::string_view text);

// The `errors` file: error id -> count. Each line is "<id> <count> <date> <time>" (bch2_sb_errors_to_text);
// an id this bcachefs has no name for is printed "(unknown error <n>)" and kept as printed. A line
// without a count, or a count that is not a number, is an error (not a dropped line).
Result<std::map<std::string, std::uint64_t>> parse_sb_errors(std::string_view text);

// Counters worth exporting for health: names containing error, fail, retry, poison, corrupt, fsck.
bool error_counter(std::string_view name);

}  // namespace fsaudit::bcachefs
