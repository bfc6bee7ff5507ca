#include <gtest/gtest.h>

#include "daemon/core/window.hpp"

using namespace fsaudit;

namespace {
// 2026-11-28 is a Saturday. Times are UTC with tz offset 0.
WallTime at(int day_of_nov, int h, int m) {
  // 2026-11-01T00:00:00Z = 1793491200
  long long s = 1793491200LL + (day_of_nov - 1) * 86400LL + h * 3600LL + m * 60LL;
  return WallTime(std::chrono::seconds(s));
}
}  // namespace

TEST(Window, SaturdayNight) {
  auto w = CalendarWindow::parse("Sat 01:00-06:00");
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_TRUE(w->contains(at(28, 1, 0), 0));
  EXPECT_TRUE(w->contains(at(28, 5, 59), 0));
  EXPECT_FALSE(w->contains(at(28, 6, 0), 0));
  EXPECT_FALSE(w->contains(at(27, 3, 0), 0));  // Friday
  EXPECT_EQ(w->next_start(at(23, 12, 0), 0), at(28, 1, 0));
  EXPECT_EQ(w->current_end(at(28, 2, 0), 0), at(28, 6, 0));
}

TEST(Window, CrossesMidnight) {
  auto w = CalendarWindow::parse("Mon-Fri 22:00-04:00");
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_TRUE(w->contains(at(27, 23, 0), 0));   // Friday late
  EXPECT_TRUE(w->contains(at(28, 3, 59), 0));   // Saturday early: the window began Friday
  EXPECT_FALSE(w->contains(at(28, 23, 0), 0));  // Saturday late: not a start day
  EXPECT_FALSE(w->contains(at(29, 2, 0), 0));   // Sunday early
  EXPECT_TRUE(w->contains(at(30, 22, 30), 0));  // Monday
  EXPECT_EQ(w->current_end(at(27, 23, 0), 0), at(28, 4, 0));
  EXPECT_EQ(w->next_start(at(28, 12, 0), 0), at(30, 22, 0));
}

TEST(Window, DailyAndAlways) {
  auto d = CalendarWindow::parse("02:00-05:00");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->contains(at(3, 4, 0), 0));
  EXPECT_FALSE(d->contains(at(3, 5, 0), 0));
  auto a = CalendarWindow::parse("*");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->always);
  EXPECT_EQ(a->next_start(at(3, 4, 0), 0), at(3, 4, 0));
}

TEST(Window, BadWindowsExplain) {
  auto w = CalendarWindow::parse("Funday 01:00-02:00");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().find("unknown day \"Funday\""), std::string::npos) << w.error();
  EXPECT_FALSE(CalendarWindow::parse("Sat 25:00-26:00").ok());
  EXPECT_FALSE(CalendarWindow::parse("Sat 01:00-01:00").ok());
}
