#pragma once
// Probe "latency_stream" (deep test, host scope): on each configured scratch/canary directory, a
// bounded streaming write (latency.stream.size / .duration) while one 4 KiB write+fsync is timed every
// latency.stream.sample_period; compared with the same samples taken idle just before. Runs only
// inside latency.stream.window and at most once per latency.stream.interval per directory.
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/latency/sampler.hpp"
#include "probes/latency/stream_state.hpp"

namespace fsaudit::latency {

struct StreamSummary {
  std::size_t idle_samples = 0, load_samples = 0;
  std::uint64_t idle_p99_ns = 0, idle_max_ns = 0, load_p99_ns = 0, load_max_ns = 0;
  double ratio = 0;  // load p99 / idle p99 (0 when either side has no samples or idle p99 is 0)
};
// Nearest-rank p99 and max of both phases (inputs need not be sorted).
StreamSummary summarize_stream(std::vector<std::uint64_t> idle, std::vector<std::uint64_t> load);

// Whether a test may start at `now`: inside the window and at least 90% of `interval` after the last
// start (the scheduler already spaces runs by `interval`; this guards restarts).
bool stream_due(const CalendarWindow& w, std::chrono::milliseconds interval, WallTime now,
                std::optional<WallTime> last, long tz_offset_seconds);


struct StreamRun {
  State state = State::ok;
  std::string reason;
  StreamSummary summary;
  std::uint64_t bytes = 0;
  double stream_seconds = 0;
  double started_at = 0;  // wall seconds
};

class StreamProbe final : public Probe {
 public:
  StreamProbe(const config::LatencyConfig& c, std::filesystem::path state_dir);
  std::string name() const override { return "latency_stream"; }
  Scope scope() const override { return Scope::host; }
  // interval and window from latency.stream; timeout covers every target's idle + load phase.
  std::optional<ProbeSchedule> own_schedule() const override;
  ProbeResult run(const Target& target, ProbeContext& ctx) override;
  // One test on `dir` now, regardless of window and interval (also used by the CLI).
  StreamRun run_once(const std::string& path, ProbeContext& ctx);

 private:
  void emit(metrics::Batch& b, const std::string& path, const StreamRun& r) const;
  config::LatencyConfig c_;
  std::filesystem::path state_file_;
  std::mutex mu_;
  std::map<std::string, double> last_start_;  // path -> wall seconds
  std::map<std::string, StreamRun> last_run_;
  bool loaded_ = false;
};

}  // namespace fsaudit::latency
