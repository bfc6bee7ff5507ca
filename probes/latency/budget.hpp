#pragma once
// The sampler's I/O budget: token buckets on a clock that is passed in (tests use a fake clock).
#include "daemon/core/clock.hpp"

namespace fsaudit::latency {

// Refills continuously at `rate` tokens per second up to `burst`; starts full.
class RateBucket {
 public:
  RateBucket(double rate_per_second, double burst, SteadyTime now)
      : rate_(rate_per_second), burst_(burst), tokens_(burst), last_(now) {}
  // Takes n tokens if that many are there.
  bool take(SteadyTime now, double n);
  // Takes n tokens whatever is there: a debt delays later takes until it is repaid.
  void charge(SteadyTime now, double n);
  // Returns n tokens taken for something that did not happen (never above the burst).
  void give_back(double n);
  double available(SteadyTime now);
  double rate() const { return rate_; }

 private:
  void refill(SteadyTime now);
  double rate_, burst_, tokens_;
  SteadyTime last_;
};

// Host-wide: write+fsync operations and bytes written, both or neither. Over any period T the
// sampler writes at most burst + rate x T of each (plus one probe-file fill, charged after the fact,
// which later samples then wait out).
class HostBudget {
 public:
  HostBudget(double ops_per_second, double bytes_per_second, double ops_burst, double bytes_burst, SteadyTime now)
      : ops_(ops_per_second, ops_burst, now), bytes_(bytes_per_second, bytes_burst, now) {}
  bool take(SteadyTime now, double ops, double bytes);
  void charge(SteadyTime now, double ops, double bytes);
  void give_back(double ops, double bytes);
  double ops_available(SteadyTime now) { return ops_.available(now); }
  double bytes_available(SteadyTime now) { return bytes_.available(now); }

 private:
  RateBucket ops_, bytes_;
};

}  // namespace fsaudit::latency
