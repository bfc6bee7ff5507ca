#include "daemon/core/window.hpp"

#include <ctime>

#include "daemon/core/strings.hpp"

namespace fsaudit {
namespace {

constexpr const char* kDays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

int day_index(std::string_view d) {
  std::string l = to_lower(d);
  for (int i = 0; i < 7; ++i)
    if (l.size() >= 3 && l.compare(0, 3, kDays[i]) == 0) return i;
  return -1;
}

bool parse_hhmm(std::string_view s, int& minutes) {
  auto p = split(s, ':');
  if (p.size() != 2) return false;
  auto h = parse_u64(p[0]);
  auto m = parse_u64(p[1]);
  if (!h || !m || *h > 24 || *m > 59 || (*h == 24 && *m != 0)) return false;
  minutes = static_cast<int>(*h * 60 + *m);
  return true;
}

long long local_minutes_since_epoch(WallTime t, long off) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count() + off;
  return s >= 0 ? s / 60 : (s - 59) / 60;
}

}  // namespace

long CalendarWindow::local_offset() {
  time_t now = ::time(nullptr);
  struct tm lt;
  ::localtime_r(&now, &lt);
  return lt.tm_gmtoff;
}

Result<CalendarWindow> CalendarWindow::parse(std::string_view text) {
  CalendarWindow w;
  w.text = std::string(text);
  auto bad = [&](const std::string& why) {
    return err("invalid window \"" + std::string(text) + "\": " + why +
               " (examples: \"Sat 01:00-06:00\", \"Mon-Fri 22:00-04:00\", \"daily 02:00-05:00\", \"*\")");
  };
  auto s = trim(text);
  if (s.empty() || s == "*" || s == "always") return w;
  w.always = false;
  auto f = split_ws(s);
  std::string_view days = "daily", times;
  if (f.size() == 1) times = f[0];
  else if (f.size() == 2) days = f[0], times = f[1];
  else return bad("expected [DAYS] HH:MM-HH:MM");
  if (days == "daily" || days == "*") {
    w.weekdays_mask = 0x7f;
  } else {
    w.weekdays_mask = 0;
    for (auto part : split(days, ',')) {
      auto range = split(part, '-');
      if (range.size() == 1) {
        int d = day_index(range[0]);
        if (d < 0) return bad("unknown day \"" + std::string(range[0]) + "\"");
        w.weekdays_mask |= 1u << d;
      } else if (range.size() == 2) {
        int a = day_index(range[0]), b = day_index(range[1]);
        if (a < 0 || b < 0) return bad("unknown day in \"" + std::string(part) + "\"");
        for (int d = a;; d = (d + 1) % 7) {
          w.weekdays_mask |= 1u << d;
          if (d == b) break;
        }
      } else {
        return bad("bad day range \"" + std::string(part) + "\"");
      }
    }
  }
  auto t = split(times, '-');
  if (t.size() != 2 || !parse_hhmm(t[0], w.start_minute) || !parse_hhmm(t[1], w.end_minute))
    return bad("expected HH:MM-HH:MM");
  if (w.start_minute == w.end_minute) return bad("start and end are the same");
  return w;
}

bool CalendarWindow::contains(WallTime t, long off) const {
  if (always) return true;
  long long lm = local_minutes_since_epoch(t, off);
  long long day = lm >= 0 ? lm / 1440 : (lm - 1439) / 1440;
  int minute = static_cast<int>(lm - day * 1440);
  // 1970-01-01 was a Thursday (index 4).
  auto weekday = [](long long d) { return static_cast<int>(((d % 7) + 7 + 4) % 7); };
  if (end_minute > start_minute) {
    return (weekdays_mask & (1u << weekday(day))) && minute >= start_minute && minute < end_minute;
  }
  // Crosses midnight: either the late part of a start day, or the early part of the day after one.
  if ((weekdays_mask & (1u << weekday(day))) && minute >= start_minute) return true;
  if ((weekdays_mask & (1u << weekday(day - 1))) && minute < end_minute) return true;
  return false;
}

WallTime CalendarWindow::next_start(WallTime t, long off) const {
  if (always || contains(t, off)) return t;
  // Step minute by minute would be slow; step to each candidate start over the next 8 days.
  long long lm = local_minutes_since_epoch(t, off);
  long long day = lm >= 0 ? lm / 1440 : (lm - 1439) / 1440;
  for (long long d = day; d < day + 9; ++d) {
    long long cand = d * 1440 + start_minute;
    if (cand < lm) continue;
    auto wt = WallTime(std::chrono::seconds(cand * 60 - off));
    if (contains(wt, off)) return wt;
  }
  return t + std::chrono::hours(24 * 7);
}

WallTime CalendarWindow::current_end(WallTime t, long off) const {
  if (always) return WallTime::max();
  long long lm = local_minutes_since_epoch(t, off);
  long long day = lm >= 0 ? lm / 1440 : (lm - 1439) / 1440;
  int minute = static_cast<int>(lm - day * 1440);
  long long end;
  if (end_minute > start_minute) end = day * 1440 + end_minute;
  else end = minute >= start_minute ? (day + 1) * 1440 + end_minute : day * 1440 + end_minute;
  return WallTime(std::chrono::seconds(end * 60 - off));
}

}  // namespace fsaudit
