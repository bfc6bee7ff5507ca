#pragma once
// Config section 'latency': fsync latency sampler and the streaming-write deep test (issue 5).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config/reader.hpp"
#include "daemon/scheduler/window.hpp"

namespace fsaudit::config {

// latency.stream: small-op latency during a bounded streaming write. Writes only under the listed
// directories (a canary's mount point or an explicitly configured scratch directory).
struct LatencyStreamConfig {
  bool enabled = false;
  std::vector<std::string> targets;  // absolute directory paths
  std::uint64_t size = 256ull << 20;  // bytes streamed at most
  std::chrono::milliseconds duration{std::chrono::seconds(30)};  // streaming stops after this
  std::chrono::milliseconds sample_period{200};                  // one 4 KiB write+fsync per period
  CalendarWindow window;                                         // when it may start ("*" = any time)
  std::chrono::milliseconds interval{std::chrono::hours(24)};    // minimum time between two tests
  int idle_samples = 20;                                          // samples before the load (idle p99)
};

struct LatencyConfig {
  bool enabled = true;
  int samples_per_run = 4;                            // 4 KiB write+fsync samples per run
  std::chrono::milliseconds interval{std::chrono::seconds(1)};   // one sampler run per target per interval
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};   // per run (covers the first probe file fill)
  std::uint64_t probe_file_size = 64ull << 20;        // preallocated, never grown past this
  std::string mode = "io_uring_fsync";                // io_uring_fsync | o_dsync
  bool direct_reads = false;                          // also time 4 KiB O_DIRECT random reads
  std::chrono::milliseconds window{std::chrono::minutes(5)};  // rolling quantile window
  std::uint64_t io_budget_per_hour = 256ull << 20;    // bytes per target per hour (token bucket)
  double fill_threshold = 0.95;                       // skip when the fs is fuller than this (0..1)
  std::vector<std::string> extra_paths;               // more directories to sample (absolute)
  std::string dir_name = ".fsaudit";                  // fsaudit-owned directory on each target
  LatencyStreamConfig stream;
};

// `s` is the 'latency' mapping (empty when absent). Reads every key it knows, then s.finish().
LatencyConfig parse_latency(Section s);

}  // namespace fsaudit::config
