#pragma once
// Config section 'scrub': scrub scheduling and timing.
//
//   scrub:
//     enabled: true                 # false: the scrub probe neither starts nor observes anything
//     filesystems: [zfs, btrfs, bcachefs, xfs, md]
//     max_concurrent: 1             # scrubs at once per host (ours and others' together)
//     interval: 30d                 # defaults below apply to every target ...
//     window: "Sat 01:00-06:00"     # CalendarWindow text; "*" = always
//     at_window_end: pause          # pause | cancel | continue (only for scrubs fsaudit started)
//     io_load_threshold: 40         # percent (PSI "some avg10", else busiest disk's utilisation); 0 = off
//     allow_degraded: false
//     observe_only: false
//     detect_timers: true           # observe instead of scheduling where a distro timer/cron job scrubs
//     spread: 0.1                   # deterministic per-target offset, fraction of the interval
//     targets:                      # ... and can be overridden per target (first match wins)
//       - match: "/srv/*"           # glob over the target name: mount point, pool name, md device
//         interval: 7d
#include <chrono>
#include <string>
#include <vector>

#include "daemon/config/reader.hpp"
#include "daemon/core/window.hpp"

namespace fsaudit::config {

enum class AtWindowEnd { pause, cancel, keep_running };

struct ScrubPolicy {
  std::chrono::milliseconds interval{std::chrono::hours(24 * 30)};
  CalendarWindow window;  // default "*"
  AtWindowEnd at_window_end = AtWindowEnd::pause;
  double io_load_threshold = 40;  // percent; 0 disables the check
  bool allow_degraded = false;
  bool observe_only = false;
  bool detect_timers = true;
  double spread = 0.1;  // 0..1 of the interval
};

struct ScrubTargetOverride {
  std::string match;  // glob over the target name
  ScrubPolicy policy;
};

struct ScrubConfig {
  bool enabled = true;
  std::vector<std::string> filesystems = {"zfs", "btrfs", "bcachefs", "xfs", "md"};
  int max_concurrent = 1;
  ScrubPolicy defaults;
  std::vector<ScrubTargetOverride> targets;

  const ScrubPolicy& policy_for(const std::string& target_name) const;
  bool covers(const std::string& fs) const;
};

const char* at_window_end_name(AtWindowEnd a);

// `s` is the 'scrub' mapping (empty when absent). Reads every key it knows, then s.finish().
ScrubConfig parse_scrub(Section s);

}  // namespace fsaudit::config
