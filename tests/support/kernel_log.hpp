#pragma once
// Helpers for tests of the kernel-log watcher: writing kernel log lines, running a host-wide probe
// with the real runner.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stop_token>
#include <string>

#include "daemon/core/clock.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::testing {

// A fresh open per line: /dev/kmsg rate-limits writers per open file (printk_devkmsg=ratelimit).
inline void write_kmsg(const std::string& line) {
  int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << "open /dev/kmsg for writing";
  ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  ::close(fd);
}

// Runs a host-wide probe on this host with the real runner and a state dir of the test's own.
struct HostProbeHarness {
  HostPaths host;
  ProcessRunner runner;
  ToolPaths tools;
  std::filesystem::path state_dir;
  std::stop_source stop;
  explicit HostProbeHarness(std::filesystem::path dir) : state_dir(std::move(dir)) {}
  ProbeResult run(Probe& p) {
    ProbeContext ctx{host, runner, SystemClock::instance(), tools, state_dir, stop.get_token(),
                     std::chrono::steady_clock::now() + std::chrono::seconds(10)};
    return p.run(Target::host(), ctx);
  }
  // Runs the probe until `pred` holds (kernel log delivery is asynchronous for journald) or ~5 s pass.
  template <class P>
  ProbeResult run_until(Probe& p, P pred) {
    ProbeResult r = run(p);
    for (int i = 0; i < 50 && !pred(r); ++i) {
      ::usleep(100'000);
      r = run(p);
    }
    return r;
  }
};

}  // namespace fsaudit::testing
