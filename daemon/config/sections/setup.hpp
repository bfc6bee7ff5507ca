#pragma once
// Config section 'setup': setup findings (how a filesystem is set up decides whether corruption can be
// seen) and detection coverage (which production stacks a canary has proven).
//
//   setup:
//     silence:                      # findings not to report, per target (glob over the target name)
//       - target: "/scratch*"
//         rules: [no_data_checksums]   # omitted or empty: every rule
//     scrub_max_age: 35d            # no completed scrub within this age: finding scrub_overdue
//     zfs_fill_max: 80              # percent of the pool allocated
//     btrfs_unallocated_min: 2GiB   # unallocated device space below this: finding btrfs_unallocated_low
//     recordsize_factor: 4          # measured I/O size this many times away from recordsize: finding
//     nocow_scan:
//       enabled: true
//       max_depth: 2                # directory levels below the mount point
//       max_entries: 2000           # entries examined per target and run
//     coverage:
//       match: [fs, data_checksums, redundancy, kernel_release]   # signature fields that must be equal
//       grace: 6h                   # a canary covers while its last met expectation is younger than
//                                   # its interval plus this grace
//       exempt: ["/boot", "/boot/efi"]   # targets left out of coverage (globs)
//     detail: compact               # full: one series per rule that cannot be judged, not one count,
//                                   # and info findings as fsaudit_setup_finding series too
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct SetupSilence {
  std::string target;               // glob over the target name
  std::vector<std::string> rules;   // empty: all rules
};

struct SetupConfig {
  std::vector<SetupSilence> silence;
  std::chrono::milliseconds scrub_max_age{std::chrono::hours(24 * 35)};
  double zfs_fill_max_percent = 80;
  std::uint64_t btrfs_unallocated_min = 2ull << 30;
  double recordsize_factor = 4;
  bool nocow_scan = true;
  int nocow_max_depth = 2;
  int nocow_max_entries = 2000;
  std::vector<std::string> coverage_match = {"fs", "data_checksums", "redundancy", "kernel_release"};
  std::chrono::milliseconds coverage_grace{std::chrono::hours(6)};
  std::vector<std::string> coverage_exempt = {"/boot", "/boot/efi"};
  std::string detail = "compact";  // compact | full (per-rule not-evaluable series)

  bool silenced(const std::string& target, const std::string& rule) const;
  bool exempt(const std::string& target) const;
};

// Signature fields a canary and a production stack can be compared on.
const std::vector<std::string>& stack_signature_fields();

// `s` is the 'setup' mapping (empty when absent). Reads every key it knows, then s.finish().
SetupConfig parse_setup(Section s);

}  // namespace fsaudit::config
