#pragma once
// One lock per canary, held for a whole cycle (recovery included): a flock on <state>/<name>/lock
// and on every member device node, so that a second daemon, a CLI run or a daemon with another
// state dir pointed at the same devices is refused instead of treating a live cycle as a crash.
// The kernel drops flocks when the holder dies, so a SIGKILLed cycle never leaves a stale lock.
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/config/sections/canary.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"

namespace fsaudit::canary {

class CanaryLock {
 public:
  CanaryLock() = default;
  CanaryLock(CanaryLock&& o) noexcept : fds_(std::move(o.fds_)) { o.fds_.clear(); }
  CanaryLock& operator=(CanaryLock&& o) noexcept;
  CanaryLock(const CanaryLock&) = delete;
  CanaryLock& operator=(const CanaryLock&) = delete;
  ~CanaryLock();
  bool held() const { return !fds_.empty(); }

  // Never waits. On refusal the error says who holds it ("pid 123 on this boot since ...").
  static Result<CanaryLock> acquire(const std::filesystem::path& state_dir, const config::CanaryTarget& t,
                                    const HostPaths& host);

 private:
  std::vector<int> fds_;
};

// /proc/sys/kernel/random/boot_id ("" if unreadable).
std::string boot_id(const HostPaths& host);

}  // namespace fsaudit::canary
