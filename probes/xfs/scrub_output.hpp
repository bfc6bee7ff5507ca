#pragma once
// Pure parser for xfs_scrub's output (string in, struct out).
#include <cstdint>
#include <optional>
#include <string_view>

namespace fsaudit::xfs {

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

}  // namespace fsaudit::xfs
