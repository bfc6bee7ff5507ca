#pragma once
// Calendar windows for deep tests and scrubs: "Sat 01:00-06:00", "Mon-Fri 22:00-04:00",
// "daily 02:00-05:00", "*" (always). Windows may cross midnight; times are local time.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/core/result.hpp"

namespace fsaudit {

struct CalendarWindow {
  std::string text;           // as written, for messages
  bool always = true;
  unsigned weekdays_mask = 0x7f;  // bit 0 = Sunday ... bit 6 = Saturday: days the window *starts* on
  int start_minute = 0;       // minutes after local midnight
  int end_minute = 24 * 60;   // may be <= start_minute: the window ends the next day

  static Result<CalendarWindow> parse(std::string_view text);
  // `tz_offset_seconds`: local = UTC + offset (tests pass 0; the daemon passes the host's).
  bool contains(WallTime t, long tz_offset_seconds = local_offset()) const;
  // Start of the next window at or after t (t itself if inside), and the end of that window.
  WallTime next_start(WallTime t, long tz_offset_seconds = local_offset()) const;
  WallTime current_end(WallTime t, long tz_offset_seconds = local_offset()) const;  // t must be inside
  static long local_offset();
};

}  // namespace fsaudit
