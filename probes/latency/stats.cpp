#include "probes/latency/stats.hpp"

#include <algorithm>

namespace fsaudit::latency {

void Histogram::observe(std::uint64_t ns) {
  auto it = std::lower_bound(kBucketBoundsNs.begin(), kBucketBoundsNs.end(), ns);  // first bound >= ns
  per_bucket_[static_cast<std::size_t>(it - kBucketBoundsNs.begin())]++;
  ++count_;
  sum_ns_ += ns;
  max_ns_ = std::max(max_ns_, ns);
}

namespace {
constexpr bool is_subset(const auto& sub, const auto& of) {
  for (auto b : sub)
    if (std::find(of.begin(), of.end(), b) == of.end()) return false;
  return true;
}
static_assert(is_subset(kCompactBoundsNs, kBucketBoundsNs), "compact bounds must be fine bounds");
}  // namespace

std::vector<double> Histogram::bounds_seconds(Detail d) {
  std::vector<double> out;
  if (d == Detail::full)
    for (auto b : kBucketBoundsNs) out.push_back(static_cast<double>(b) / 1e9);
  else if (d == Detail::compact)
    for (auto b : kCompactBoundsNs) out.push_back(static_cast<double>(b) / 1e9);
  return out;
}

std::vector<std::uint64_t> Histogram::cumulative(Detail d) const {
  std::vector<std::uint64_t> out;
  std::uint64_t acc = 0;
  auto compact = kCompactBoundsNs.begin();
  for (std::size_t i = 0; i < per_bucket_.size(); ++i) {
    acc += per_bucket_[i];
    // A compact bucket's count is the fine count at the same bound (cumulative), then +Inf.
    bool last = i + 1 == per_bucket_.size();
    if (d == Detail::full || last) {
      out.push_back(acc);
    } else if (d == Detail::compact && compact != kCompactBoundsNs.end() && *compact == kBucketBoundsNs[i]) {
      out.push_back(acc);
      ++compact;
    }
  }
  return out;
}

std::optional<std::uint64_t> nearest_rank(const std::vector<std::uint64_t>& sorted, std::uint32_t q_ppm) {
  if (sorted.empty()) return std::nullopt;
  const std::uint64_t n = sorted.size();
  std::uint64_t rank = (static_cast<std::uint64_t>(q_ppm) * n + 999'999) / 1'000'000;  // ceil(q*n)
  rank = std::clamp<std::uint64_t>(rank, 1, n);
  return sorted[rank - 1];
}

void RollingWindow::add(SteadyTime t, std::uint64_t ns) {
  samples_.emplace_back(t, ns);
  if (size() > max_samples_) drop_front(size() - max_samples_);
}

void RollingWindow::drop_front(std::size_t n) {
  head_ += n;
  if (head_ == samples_.size()) {
    // Emptied: the storage goes too. On a host with thousands of stacks, each sampled once every hour
    // or two, nearly every window is empty between turns, and an emptied vector kept its room (128
    // bytes after a burst of 5 samples) for good.
    std::vector<std::pair<SteadyTime, std::uint64_t>>().swap(samples_);
    head_ = 0;
  } else if (head_ * 2 >= samples_.size()) {
    samples_.erase(samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

void RollingWindow::expire(SteadyTime now) {
  std::size_t n = 0;
  while (head_ + n < samples_.size() && now - samples_[head_ + n].first >= window_) ++n;
  if (n > 0) drop_front(n);
}

std::size_t RollingWindow::size(SteadyTime now) {
  expire(now);
  return size();
}

std::optional<RollingWindow::Quantiles> RollingWindow::quantiles(SteadyTime now) {
  expire(now);
  if (size() == 0) return std::nullopt;
  std::vector<std::uint64_t> v;
  v.reserve(size());
  for (auto it = samples_.begin() + static_cast<std::ptrdiff_t>(head_); it != samples_.end(); ++it) v.push_back(it->second);
  std::sort(v.begin(), v.end());
  return Quantiles{*nearest_rank(v, 500'000), *nearest_rank(v, 990'000), *nearest_rank(v, 999'000), v.back()};
}

}  // namespace fsaudit::latency
