#pragma once
// Pure latency statistics: a fixed log-spaced histogram (Prometheus buckets) and a rolling window of
// samples with nearest-rank quantiles. No I/O; time is passed in.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/core/clock.hpp"

namespace fsaudit::latency {

// Bucket upper bounds in nanoseconds: 50 us .. 30 s in a 1-2-5 series (three per decade), then 30 s.
// A sample of exactly a bound goes into that bound's bucket (Prometheus `le`).
inline constexpr std::array<std::uint64_t, 19> kBucketBoundsNs = {
    50'000,        100'000,        200'000,        500'000,                          // 50us .. 500us
    1'000'000,     2'000'000,      5'000'000,                                        // 1ms .. 5ms
    10'000'000,    20'000'000,     50'000'000,                                       // 10ms .. 50ms
    100'000'000,   200'000'000,    500'000'000,                                      // 100ms .. 500ms
    1'000'000'000, 2'000'000'000,  5'000'000'000,                                    // 1s .. 5s
    10'000'000'000, 20'000'000'000, 30'000'000'000};                                 // 10s .. 30s

// How much of a stack's latency is exported. `summary` (the default) keeps what the dashboards and
// the alert read: the histogram's count and sum (its +Inf bucket only) and the window percentiles,
// 6 series per stack: the series budget allows 8 per stack (issue 33), and the compact histogram
// alone was 12. `compact` adds the 9-bucket histogram (for histogram_quantile over any range),
// `full` is the whole set (latency.detail).
enum class Detail { summary, compact, full };

// The compact histogram's bounds, a subset of kBucketBoundsNs so that both expositions count the
// same samples: SSD flushes (0.5 ms, 2 ms), HDD seeks and flushes (5 .. 50 ms), a struggling stack
// (0.1 s and 0.5 s: the dashboards' thresholds and the alert's) and a stalled one (2 s, +Inf).
inline constexpr std::array<std::uint64_t, 9> kCompactBoundsNs = {
    500'000, 2'000'000, 5'000'000, 10'000'000, 20'000'000, 50'000'000, 100'000'000, 500'000'000, 2'000'000'000};

class Histogram {
 public:
  void observe(std::uint64_t ns);
  // Upper bounds in seconds (without +Inf), for metrics::Batch::histogram.
  static std::vector<double> bounds_seconds(Detail d = Detail::full);
  // Cumulative counts: one per bound of `d` plus the +Inf bucket (== count()).
  std::vector<std::uint64_t> cumulative(Detail d = Detail::full) const;
  std::uint64_t count() const { return count_; }
  std::uint64_t sum_ns() const { return sum_ns_; }
  double sum_seconds() const { return static_cast<double>(sum_ns_) / 1e9; }
  std::uint64_t max_ns() const { return max_ns_; }

 private:
  std::array<std::uint64_t, kBucketBoundsNs.size() + 1> per_bucket_{};  // last = above 30 s
  std::uint64_t count_ = 0;
  std::uint64_t sum_ns_ = 0;
  std::uint64_t max_ns_ = 0;
};

// Nearest-rank quantile of `sorted` (ascending): the value at 1-based rank ceil(q * n), with rank
// clamped to [1, n]. q in (0, 1]. Empty input: nullopt. Computed in integers (q given in parts per
// million) so that p99.9 of 1000 samples is exactly the 999th value.
std::optional<std::uint64_t> nearest_rank(const std::vector<std::uint64_t>& sorted, std::uint32_t q_ppm);

// Samples of the last `window`: a sample taken at time t counts while now - t < window (so a sample
// exactly `window` old has expired). Oldest samples are also dropped beyond `max_samples`.
class RollingWindow {
 public:
  explicit RollingWindow(std::chrono::steady_clock::duration window, std::size_t max_samples = 200'000)
      : window_(window), max_samples_(max_samples) {}
  void add(SteadyTime t, std::uint64_t ns);
  void expire(SteadyTime now);
  std::size_t size() const { return samples_.size() - head_; }
  std::size_t storage_bytes() const { return samples_.capacity() * sizeof(samples_[0]); }  // for tests
  // Samples still inside the window at `now` (drops the older ones).
  std::size_t size(SteadyTime now);
  struct Quantiles {
    std::uint64_t p50_ns, p99_ns, p999_ns, max_ns;
  };
  // Expires first; nullopt when the window is empty.
  std::optional<Quantiles> quantiles(SteadyTime now);

 private:
  std::chrono::steady_clock::duration window_;
  std::size_t max_samples_;
  // The live samples are samples_[head_..]: a vector, not a deque, because an empty std::deque
  // still holds a 512-byte block and its map, one per device stack (issue 33: memory per
  // filesystem). Expired samples are erased in one go once they are half of the vector.
  std::vector<std::pair<SteadyTime, std::uint64_t>> samples_;
  std::size_t head_ = 0;
  void drop_front(std::size_t n);
};

}  // namespace fsaudit::latency
