#include "daemon/probe/same_as_last.hpp"

#include <cstring>
#include <functional>

namespace fsaudit {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xbf58476d1ce4e5b9ull;
}

// Targets not seen for this long (unmounted, excluded) are forgotten, so that thousands of
// short-lived container mounts over months do not pile up.
constexpr auto kForgetAfter = std::chrono::minutes(30);

}  // namespace

Fingerprint& Fingerprint::add(std::string_view s) {
  h_ = mix(mix(h_, s.size()), std::hash<std::string_view>{}(s));
  return *this;
}

Fingerprint& Fingerprint::add(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  h_ = mix(h_, bits);
  return *this;
}

Fingerprint& Fingerprint::add(std::uint64_t v) {
  h_ = mix(h_, v);
  return *this;
}

bool LastPublished::same(const std::string& target, std::uint64_t fp, const ProbeContext& ctx) {
  const auto now = ctx.clock.now();
  std::lock_guard l(mu_);
  if (now - pruned_ > kForgetAfter) {
    std::erase_if(seen_, [&](const auto& kv) { return now - kv.second.at > kForgetAfter; });
    pruned_ = now;
  }
  const std::uint64_t check = Fingerprint().add(target).value();
  const Seen seen{fp, now, check};
  auto [it, fresh] = seen_.try_emplace(std::hash<std::string_view>{}(target), seen);
  const bool keep = !fresh && !ctx.republish && it->second.fp == fp && it->second.check == check;
  it->second = seen;
  return keep;
}

std::size_t LastPublished::size() const {
  std::lock_guard l(mu_);
  return seen_.size();
}

}  // namespace fsaudit
