#pragma once
// Probe "latency" (host-wide): one fsync latency sampler per device stack (ZFS pool, btrfs
// filesystem, md array, block device), not per mount. Each run looks at the mount table, groups the
// watched filesystems by stack (stacks.hpp), and gives the stacks that are due under the I/O budget
// (budget.hpp) a 4 KiB write+fsync sample on the stack's one probe file. Samples run on their own
// threads, so a stack whose fsync hangs is reported stuck while the others keep sampling. Skips
// (read-only, too full, ENOSPC, EIO, over budget, stuck) are state and counters, never a failure.
#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/spare_threads.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/latency/budget.hpp"
#include "probes/latency/sampler.hpp"
#include "probes/latency/stacks.hpp"
#include "probes/latency/stats.hpp"

namespace fsaudit::latency {

struct SamplerSettings {
  int samples = 1;  // write+fsync samples each time a stack is due
  std::uint64_t file_size = 1ull << 20;
  Mode mode = Mode::io_uring_fsync;
  bool direct_reads = false;
  std::chrono::steady_clock::duration window = std::chrono::minutes(5);
  Detail detail = Detail::summary;
  double fill_threshold = 0.95;
  std::string dir_name = ".fsaudit";
  std::chrono::milliseconds interval{std::chrono::seconds(1)};
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
  // The budget's defaults are the config's (latency.budget), written once.
  double stack_writes_per_second = config::LatencyBudgetConfig{}.stack_writes_per_second;
  double writes_per_second = config::LatencyBudgetConfig{}.writes_per_second;
  std::uint64_t bytes_per_second = config::LatencyBudgetConfig{}.bytes_per_second;
  int parallel = 2;    // samples in flight at once within a run (each one sampler process)
  std::string helper;  // fsaudit-helper's socket: asked to create the probe file when we may not
  ProbeSchedule schedule() const { return ProbeSchedule{interval, interval / 10, timeout, std::nullopt}; }
  static SamplerSettings from(const config::LatencyConfig& c);
};

// What one sampling of one stack did (pure data; the I/O is in sample_stack()).
struct SampleResult {
  State state = State::ok;
  std::string reason;
  std::vector<std::uint64_t> fsync_ns;  // write+fsync durations, in order
  std::vector<std::uint64_t> read_ns;   // O_DIRECT read durations (direct_reads)
  std::uint64_t fill_bytes = 0;         // bytes written to create the probe file
  std::uint64_t bytes = 0;              // all bytes written and read (fill included)
  std::uint64_t fsyncs = 0;             // write+fsync operations issued (fill's fsync included)
  std::string mode;                     // writer actually used
};

// statvfs checks on `mountpoint`, then the probe file under `dir`, then s.samples write+fsync samples
// (stops early when keep_going() turns false). Blocking I/O: run it off the scheduler's thread.
SampleResult sample_stack(const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
                          const SamplerSettings& s, std::uint64_t seed, const std::function<bool()>& keep_going);

// Which stacks get a sample now: each stack at most stack_writes_per_second (bursts of 2 x samples,
// so a late tick catches up), all stacks together at most writes_per_second and bytes_per_second.
// Least recently sampled first, so a budget smaller than the number of stacks goes round-robin.
// Thread-safe (samples charge their probe-file fill from their own threads).
class Dispatcher {
 public:
  Dispatcher(const SamplerSettings& s, SteadyTime now);
  // `ids`: the stacks to consider; `busy`: still sampling (never dispatched twice). Stacks whose own
  // rate allows a sample but the host budget does not are added to *deferred.
  std::vector<std::string> due(SteadyTime now, const std::vector<std::string>& ids, const std::set<std::string>& busy,
                               std::vector<std::string>* deferred);
  // The same by position, for a run every second over hundreds of stacks: set_stacks() once per
  // plan, then due_at() looks nothing up by name. `busy[i]` is stack i's; returns and defers indexes.
  void set_stacks(const std::vector<std::string>& ids);
  std::vector<std::size_t> due_at(SteadyTime now, const std::vector<char>& busy, std::vector<std::size_t>* deferred);
  // A probe file fill: its bytes and its fsync, charged after the fact.
  void charge(SteadyTime now, double ops, double bytes);
  // Stack i (set_stacks() order) was due but did not sample (its run ended first): its turn, its
  // own tokens and the host budget it took go back.
  void give_back(std::size_t i);
  void forget_except(const std::set<std::string>& ids);

 private:
  struct PerStack {
    RateBucket bucket;
    SteadyTime last, previous_last;
  };
  using Stack = std::pair<std::string, PerStack>;
  template <typename SlotAt>
  std::vector<std::size_t> due_locked(SteadyTime now, std::size_t n, SlotAt slot_at, const std::vector<char>& busy,
                                      std::vector<std::size_t>* deferred);
  std::size_t position_locked(const std::string& id, SteadyTime now);  // adds the stack if new
  Stack new_stack(const std::string& id, SteadyTime now) const;
  std::mutex mu_;
  double samples_, stack_rate_;
  HostBudget host_;
  // By id, sorted: one array, not a tree node per stack (112 bytes each at 9,000 stacks).
  std::vector<Stack> stacks_;
  std::vector<std::uint32_t> slots_;  // set_stacks() order: positions in stacks_
  // due_locked()'s list of ready stacks, kept between runs: a fresh 13 KB array every second (at 801
  // stacks) made glibc consolidate its free chunks on every run.
  std::vector<std::pair<SteadyTime, std::size_t>> ready_;
};

// Everything kept about one stack between runs.
class StackStats {
 public:
  explicit StackStats(std::chrono::steady_clock::duration window) : window(window) {}
  // Sets the state; anything but ok counts one skip for that reason.
  void set_state(State s);
  void record(SteadyTime now, const SampleResult& r);
  // labels: stack, target (where the probe file lives). Detail::summary: the histogram's count and
  // sum (+Inf bucket only), window p50 and p99, and the skip counters of reasons that occurred;
  // compact: the same with the 9-bucket histogram; full: every series.
  void emit(metrics::Batch& b, const metrics::Labels& l, SteadyTime now, Detail detail, bool direct_reads);
  // Changes whenever what emit() shows changes (a sample, a state change, a sample leaving the
  // window): the store re-serialises a stack's series only then. Most stacks wait for their turn
  // most of the time.
  std::uint64_t version(SteadyTime now);

  Histogram fsync;
  // O_DIRECT reads (latency.direct_reads, off by default): made by the first one. Inline, it was a
  // third of every stack's stats (184 bytes, 8,600 stacks at 10,000 filesystems).
  std::unique_ptr<Histogram> reads;
  RollingWindow window;
  State state = State::ok;
  // Times skipped, by State (ok's unused). An array, not a map by name: nearly every stack of a large host
  // waits its turn in the host budget (io_budget), and a map node each was 80 bytes.
  std::array<std::uint64_t, static_cast<std::size_t>(State::error) + 1> skipped{};
  std::uint64_t io_bytes = 0;
  std::string mode;
  bool in_flight = false;
  std::uint64_t seed = 0;
  std::uint64_t cleaned_generation = 0;  // plan generation whose stale probe files were removed
  std::mutex mu;  // never held during I/O

 private:
  std::uint64_t version_ = 0;  // grows with every change emit() would show
  std::size_t live_ = 0;       // window samples at the last version()
};

class LatencyProbe final : public Probe {
 public:
  // `watch`: which filesystems the daemon watches (targets: config with canaries excluded).
  LatencyProbe(SamplerSettings s, TargetSelection watch, StackSelection stacks);
  std::string name() const override { return "latency"; }
  Scope scope() const override { return Scope::host; }
  std::optional<ProbeSchedule> own_schedule() const override { return s_.schedule(); }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;
  const SamplerSettings& settings() const { return s_; }

 private:
  struct Shared;
  struct Lanes;
  // The run's steps, in order: plan the stacks from the mount table (plans_ stays the last good
  // plan when the table cannot be read), their entries, which are due, sample those, publish.
  Result<void> replan(ProbeContext& ctx);
  void rebuild_entries();
  std::vector<std::size_t> take_due(SteadyTime now);
  Result<void> sample(const std::vector<std::size_t>& due, ProbeContext& ctx);
  static void lane(const std::shared_ptr<Lanes>& lanes, const std::shared_ptr<Shared>& shared,
                   const SamplerSettings& settings, const Clock* clock, SteadyTime deadline, std::uint64_t generation);
  void mark_late_stuck();
  // `whole`: every stack's part (a new plan, or the store must get everything afresh); otherwise only
  // the parts whose version changed since the last batch (Batch::parts_delta).
  metrics::Batch batch(SteadyTime end, bool whole);
  SamplerSettings s_;
  TargetSelection watch_;
  StackSelection sel_;
  std::shared_ptr<Shared> shared_;  // outlives the probe while a hung sample still runs
  MountSnapshot mounts_;  // the table plans_ was made from
  SteadyTime planned_at_{};
  // Shared and never changed in place: a batch's parts are built when the store takes the batch, after
  // the run, and hold the plan they were made from (a re-plan in the next run replaces the pointer).
  std::shared_ptr<const std::vector<StackPlan>> plans_ = std::make_shared<const std::vector<StackPlan>>();
  // The sampled stacks of plans_, rebuilt with the plan, so that a run (one a second) builds no
  // map and copies no label: its cost grows with the stacks that sample or change, plus a pass
  // over an array.
  struct Entry {
    const StackPlan* plan;
    std::shared_ptr<StackStats> st;
    std::uint64_t published_version = ~0ull;  // the version the last batch had of it
  };
  std::vector<Entry> entries_;
  std::uint64_t entries_generation_ = 0;
  std::vector<char> busy_;             // per entry, this run: a sample still in flight (kept between runs)
  std::vector<std::size_t> deferred_;  // per run: due stacks put off by the host budget
  std::vector<char> waiting_;          // per entry: marked io_budget and not dispatched since
  std::uint64_t generation_ = 0;  // bumped on every new plan
  // The last published batch: the plan it was of, and its 5 s slot. Runs in between publish nothing.
  static constexpr std::chrono::seconds kPublishEvery{5};
  std::uint64_t published_generation_ = ~0ull;
  std::int64_t published_slot_ = -1;
};

// latency.enabled: false — removes probe files left on the watched filesystems, samples nothing.
class LatencyCleanupProbe final : public Probe {
 public:
  LatencyCleanupProbe(std::string dir_name, TargetSelection watch, std::vector<std::string> paths)
      : dir_name_(std::move(dir_name)), watch_(std::move(watch)), paths_(std::move(paths)) {}
  std::string name() const override { return "latency"; }
  Scope scope() const override { return Scope::host; }
  // No start jitter: the first run is a cheap directory check that READY waits for, and a random
  // delay of up to 30 s there made `systemctl start` wait for nothing.
  std::optional<ProbeSchedule> own_schedule() const override {
    return ProbeSchedule{std::chrono::minutes(10), std::chrono::seconds(0), std::chrono::seconds(20), std::nullopt};
  }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

 private:
  std::string dir_name_;
  TargetSelection watch_;
  std::vector<std::string> paths_;
};

// The threads samples wait on (one per sample in flight; idle ones are reused, then end after a
// minute). Process-wide and never destroyed: a thread waiting for a hung sample may outlive every probe.
SpareThreads& sample_threads();

// Filesystems the sampler never writes to: pseudo, network, inherently read-only.
bool sampler_applies(const Target& t);

// latency.{discover,targets,exclude,dir_name} as plan_stacks() takes them (the helper checks with it too).
StackSelection stack_selection(const config::LatencyConfig& c);

// Factories. make_latency_probes() is what daemon/app/registry.cpp calls: "latency", plus
// "latency_stream" when latency.stream.enabled.
std::vector<std::unique_ptr<Probe>> make_latency_probes(const config::Config& cfg);

}  // namespace fsaudit::latency
