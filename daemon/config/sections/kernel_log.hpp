#pragma once
// Config section 'kernel_log': Kernel log watcher.
#include <cstdint>
#include <string>

#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct KernelLogConfig {
  // Where kernel messages come from: "auto" = the systemd journal when journald runs and journal files
  // exist, else /dev/kmsg; "journal" or "kmsg" force one.
  std::string source = "auto";
  // At most this many log records are read per run; the rest waits for the next run (bounded work).
  std::int64_t max_lines_per_run = 5000;
  // File name (inside state_dir) of the cursor + running counters.
  std::string state_file = "kernel_log.state.json";
  // Where to start when no state exists yet: "end" = only messages logged from now on (default),
  // "boot" = everything of the current boot still in the ring buffer / journal.
  std::string start_at = "end";
  // Read this journal directory instead of the local system journal ("" = local journal). For
  // containers that mount the host's journal, and for tests with a private journald.
  std::string journal_directory;
};

// `s` is the 'kernel_log' mapping (empty when absent). Reads every key it knows, then s.finish().
KernelLogConfig parse_kernel_log(Section s);

}  // namespace fsaudit::config
