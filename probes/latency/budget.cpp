#include "probes/latency/budget.hpp"

#include <algorithm>

namespace fsaudit::latency {

void RateBucket::refill(SteadyTime now) {
  if (now > last_) {
    double s = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + s * rate_);
    last_ = now;
  }
}

bool RateBucket::take(SteadyTime now, double n) {
  refill(now);
  // A hair of slack: a refill of exactly n tokens in floating point must count as n.
  if (tokens_ + 1e-9 * std::max(1.0, n) < n) return false;
  tokens_ -= n;
  return true;
}

void RateBucket::charge(SteadyTime now, double n) {
  refill(now);
  tokens_ -= n;
}

void RateBucket::give_back(double n) { tokens_ = std::min(burst_, tokens_ + n); }

double RateBucket::available(SteadyTime now) {
  refill(now);
  return tokens_;
}

bool HostBudget::take(SteadyTime now, double ops, double bytes) {
  if (ops_.available(now) + 1e-9 * std::max(1.0, ops) < ops) return false;
  if (bytes_.available(now) + 1e-9 * std::max(1.0, bytes) < bytes) return false;
  ops_.charge(now, ops);
  bytes_.charge(now, bytes);
  return true;
}

void HostBudget::charge(SteadyTime now, double ops, double bytes) {
  ops_.charge(now, ops);
  bytes_.charge(now, bytes);
}

void HostBudget::give_back(double ops, double bytes) {
  ops_.give_back(ops);
  bytes_.give_back(bytes);
}

}  // namespace fsaudit::latency
