#pragma once
// Config section 'smart': how the smart probe reads disks' SMART data (its interval and whole-run
// timeout are probes.smart's).
#include <chrono>
#include <cstdint>

#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct SmartConfig {
  // Disks read at the same time: enough to finish many disks within a run, few enough that a slow
  // SAS expander or USB bridge is not asked for several disks at once.
  std::int64_t concurrency = 2;
  // One smartctl call's limit; a device that does not answer by then is killed and reported.
  std::chrono::milliseconds call_timeout{std::chrono::seconds(60)};
};

// `s` is the 'smart' mapping (empty when absent). Reads every key it knows, then s.finish().
SmartConfig parse_smart(Section s);

}  // namespace fsaudit::config
