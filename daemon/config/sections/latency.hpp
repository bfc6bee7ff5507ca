#pragma once
// Config section 'latency': fsync latency sampler and the streaming-write deep test.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config/reader.hpp"
#include "daemon/core/window.hpp"

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

// Host-wide and per-stack limits on what the sampler writes. Enforced by token buckets in
// probes/latency/budget.hpp; the defaults suit HDD pools (1 write+fsync per second per pool).
struct LatencyBudgetConfig {
  double stack_writes_per_second = 1.0;    // write+fsync samples per device stack (pool) per second
  double writes_per_second = 5.0;          // host-wide write+fsync samples per second
  std::uint64_t bytes_per_second = 1ull << 20;  // host-wide bytes written (samples + probe file fill)
};

struct LatencyConfig {
  bool enabled = true;
  bool discover = true;                               // one sampler per device stack of the watched targets
  std::vector<std::string> targets;                   // opt-in paths: sample the stack holding each, probe file there
  std::vector<std::string> exclude;                   // opt-out: mount point globs never written to
  int samples_per_run = 1;                            // write+fsync samples per stack each time it is due
  std::chrono::milliseconds interval{std::chrono::seconds(1)};   // how often the sampler looks for due stacks
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};   // per run (covers the first probe file fill)
  std::uint64_t probe_file_size = 1ull << 20;         // one per stack, never grown past this
  std::string mode = "io_uring_fsync";                // io_uring_fsync | o_dsync
  bool direct_reads = false;                          // also time 4 KiB O_DIRECT random reads
  std::chrono::milliseconds window{std::chrono::minutes(5)};  // rolling quantile window
  std::string detail = "summary";                     // summary | compact | full: series exported per stack
  LatencyBudgetConfig budget;
  int parallel = 2;                                   // samples in flight at once (one sampler process each)
  double fill_threshold = 0.95;                       // skip when the fs is fuller than this (0..1)
  std::string dir_name = ".fsaudit";                  // fsaudit-owned directory holding the probe file
  LatencyStreamConfig stream;
};

// `s` is the 'latency' mapping (empty when absent). Reads every key it knows, then s.finish().
LatencyConfig parse_latency(Section s);

}  // namespace fsaudit::config
