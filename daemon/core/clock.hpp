#pragma once
#include <atomic>
#include <chrono>
#include <mutex>

namespace fsaudit {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

// Time is injected so that the scheduler and rolling windows are tested with a fake clock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime now() const = 0;
  virtual WallTime wall() const = 0;
  double wall_seconds() const {
    return std::chrono::duration<double>(wall().time_since_epoch()).count();
  }
};

class SystemClock final : public Clock {
 public:
  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  WallTime wall() const override { return std::chrono::system_clock::now(); }
  static const SystemClock& instance();
};

// Moves only when told to. Wall and steady time advance together.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime wall_start = WallTime(std::chrono::seconds(1'700'000'000)))
      : wall_start_(wall_start) {}
  SteadyTime now() const override {
    std::lock_guard l(mu_);
    return SteadyTime(offset_);
  }
  WallTime wall() const override {
    std::lock_guard l(mu_);
    return wall_start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(offset_);
  }
  void advance(std::chrono::steady_clock::duration d) {
    std::lock_guard l(mu_);
    offset_ += d;
  }

 private:
  mutable std::mutex mu_;
  WallTime wall_start_;
  std::chrono::steady_clock::duration offset_{std::chrono::hours(1)};
};

}  // namespace fsaudit
