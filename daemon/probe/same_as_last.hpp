#pragma once
// Most runs of a lightweight probe find what the last run found (the same mount options, an idle
// filesystem's statfs, zero error counters). Publishing that again costs the daemon more than the
// run itself: building the batch, rendering its text, replacing it in the store. A probe remembers
// a fingerprint of what it last published per target and answers ProbeResult::same_as_last() when
// the new one matches and the scheduler says the store still holds the old metrics
// (ProbeContext::republish).
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "daemon/probe/probe.hpp"

namespace fsaudit {

// A 64-bit fingerprint of a sequence of values; each string is delimited by its length, so
// ("ab", "c") and ("a", "bc") differ.
class Fingerprint {
 public:
  Fingerprint& add(std::string_view s);
  Fingerprint& add(double v);
  Fingerprint& add(std::uint64_t v);
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0x6a09e667f3bcc908ull;
};

class LastPublished {
 public:
  // True when the target's last published fingerprint is `fp` and the context lets the run keep it:
  // the run then returns ProbeResult::same_as_last(). Otherwise records `fp` as what this run
  // publishes (the caller must then return its metrics, ok).
  bool same(const std::string& target, std::uint64_t fp, const ProbeContext& ctx);
  std::size_t size() const;

 private:
  struct Seen {
    std::uint64_t fp;
    SteadyTime at;
    std::uint64_t check;  // a second, independent hash of the target: see seen_
  };
  mutable std::mutex mu_;
  // By a hash of the target's name, not the name: a copy of every target's name per probe was 2 MB at
  // 10,000 filesystems. Two targets that share the hash (and not `check`) share a slot: each run of
  // either then finds the other's there and publishes, so a collision costs a publish, never a skip.
  std::unordered_map<std::uint64_t, Seen> seen_;
  SteadyTime pruned_{};
};

}  // namespace fsaudit
