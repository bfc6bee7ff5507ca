#pragma once
// Probe "latency" (per target) and "latency_paths" (host: latency.extra_paths): a few 4 KiB
// write+fsync samples per run on a preallocated probe file, exported as a histogram and rolling
// p50/p99/p99.9 gauges. Skips (read-only, too full, ENOSPC, EIO, over budget) are reported as state
// and counters, never as a failure of the daemon.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/latency/sampler.hpp"
#include "probes/latency/stats.hpp"

namespace fsaudit::latency {

// Bytes per hour, refilled continuously; starts full (one hour's worth may be used at once).
class TokenBucket {
 public:
  TokenBucket(std::uint64_t per_hour, SteadyTime now)
      : per_hour_(static_cast<double>(per_hour)), tokens_(per_hour_), last_(now) {}
  // Takes n bytes if available.
  bool take(SteadyTime now, std::uint64_t n);
  // Charges bytes already spent (may go below zero, delaying later samples).
  void charge(SteadyTime now, std::uint64_t n);
  double available(SteadyTime now);

 private:
  void refill(SteadyTime now);
  double per_hour_, tokens_;
  SteadyTime last_;
};

// Everything the sampler keeps about one target between runs (pure; exported by emit()).
class TargetStats {
 public:
  TargetStats(std::chrono::steady_clock::duration window, std::uint64_t budget_per_hour, SteadyTime now)
      : window(window), budget(budget_per_hour, now) {}
  void record_fsync(SteadyTime t, std::uint64_t ns) {
    fsync.observe(ns);
    window.add(t, ns);
  }
  // Sets the state; anything but ok counts one skip for that reason.
  void set_state(State s);
  void emit(metrics::Batch& b, const std::string& target, SteadyTime now, bool direct_reads);

  Histogram fsync, reads;
  RollingWindow window;
  TokenBucket budget;
  State state = State::ok;
  std::map<std::string, std::uint64_t> skipped;  // reason -> runs skipped
  std::uint64_t io_bytes = 0;                    // bytes written and read by the sampler
  std::string mode;                              // writer actually used
  std::mutex mu;                                 // one target never overlaps itself; belt and braces
  std::uint64_t seed = 0;
};

struct SamplerSettings {
  int samples = 4;
  std::uint64_t file_size = 64ull << 20;
  Mode mode = Mode::io_uring_fsync;
  bool direct_reads = false;
  std::chrono::steady_clock::duration window = std::chrono::minutes(5);
  std::uint64_t budget_per_hour = 256ull << 20;
  double fill_threshold = 0.95;
  std::string dir_name = ".fsaudit";
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
  ProbeSchedule schedule() const { return ProbeSchedule{interval, interval / 10, timeout, std::nullopt}; }
  static SamplerSettings from(const config::LatencyConfig& c);
};

// The shared engine: state per target label, thread-safe across targets.
class Sampler {
 public:
  explicit Sampler(SamplerSettings s) : s_(std::move(s)) {}
  // Samples the filesystem holding `mountpoint`, probe file under `dir` (= mountpoint/dir_name or an
  // extra path/dir_name). Appends the target's metrics to `out`. Returns the state of this run.
  State sample(const std::string& label, const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
               ProbeContext& ctx, metrics::Batch& out, std::string* why);
  const SamplerSettings& settings() const { return s_; }

 private:
  std::shared_ptr<TargetStats> stats_for(const std::string& label, SteadyTime now);
  SamplerSettings s_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<TargetStats>> stats_;
};

// Filesystems the sampler never writes to: pseudo, network, inherently read-only.
bool sampler_applies(const Target& t);

class LatencyProbe final : public Probe {
 public:
  explicit LatencyProbe(SamplerSettings s) : sampler_(std::move(s)) {}
  std::string name() const override { return "latency"; }
  bool applies_to(const Target& t) const override { return sampler_applies(t); }
  std::optional<ProbeSchedule> own_schedule() const override { return sampler_.settings().schedule(); }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

 private:
  Sampler sampler_;
};

class LatencyPathsProbe final : public Probe {
 public:
  LatencyPathsProbe(SamplerSettings s, std::vector<std::string> paths)
      : sampler_(std::move(s)), paths_(std::move(paths)) {}
  std::string name() const override { return "latency_paths"; }
  Scope scope() const override { return Scope::host; }
  std::optional<ProbeSchedule> own_schedule() const override { return sampler_.settings().schedule(); }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

 private:
  Sampler sampler_;
  std::vector<std::string> paths_;
};

// latency.enabled: false — removes probe files left by an earlier run, samples nothing.
class LatencyCleanupProbe final : public Probe {
 public:
  explicit LatencyCleanupProbe(std::string dir_name) : dir_name_(std::move(dir_name)) {}
  std::string name() const override { return "latency"; }
  bool applies_to(const Target& t) const override { return sampler_applies(t); }
  std::optional<ProbeSchedule> own_schedule() const override {
    return ProbeSchedule{std::chrono::minutes(10), std::chrono::seconds(30), std::chrono::seconds(20), std::nullopt};
  }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

 private:
  std::string dir_name_;
};

// Factories. make_latency_probes() is what daemon/app/registry.cpp calls: "latency", plus
// "latency_paths" when extra_paths are set and "latency_stream" when latency.stream.enabled.
std::vector<std::unique_ptr<Probe>> make_latency_probes(const config::Config& cfg);

}  // namespace fsaudit::latency
