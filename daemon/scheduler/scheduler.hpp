#pragma once
// One scheduler owns time (design note 3): intervals, jitter, deadlines, calendar windows,
// staggered starts, and no self-overlap of one probe on one target. Probes never sleep or keep
// timers of their own. The clock is injected; tick() is the whole algorithm, so tests drive it with a
// FakeClock and an InlineExecutor.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/scheduler/thread_pool.hpp"
#include "daemon/scheduler/window.hpp"

namespace fsaudit {

struct JobSpec {
  std::shared_ptr<Probe> probe;
  Target target;
  std::chrono::milliseconds interval{std::chrono::seconds(30)};
  std::chrono::milliseconds jitter{0};
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
  std::optional<CalendarWindow> window;  // deep tests: only start inside it
  std::string key() const { return probe->name() + "\x1f" + target.name; }
};

struct JobOutcome {
  JobSpec spec;  // a copy: the live job may be replaced by a reload meanwhile
  ProbeResult result;
  double duration_seconds = 0;
  bool timed_out = false;   // reported at the deadline; the run itself may still be going
  bool late_finish = false; // a run that timed out has now returned (its result is not published)
  WallTime finished_at;
};

struct JobStatus {
  std::string key;
  bool running = false;
  bool stuck = false;  // past its deadline and still running
  bool ever_finished = false;
  SteadyTime next_due;
  std::uint64_t runs = 0, timeouts = 0, failures = 0;
};

class Scheduler {
 public:
  using Sink = std::function<void(const JobOutcome&)>;
  // Builds the context of one run: host paths, runner, state dir; the scheduler fills stop and deadline.
  using ContextFactory = std::function<ProbeContext(std::stop_token stop, SteadyTime deadline)>;

  Scheduler(const Clock& clock, Executor& executor, ContextFactory make_context, Sink sink,
            std::uint64_t seed = std::random_device{}());
  ~Scheduler();  // requests stop of every run; does not wait (the executor owner does)

  // Installs the job list. Jobs whose key already exists keep their timing and running state.
  void set_jobs(std::vector<JobSpec> jobs);
  // Dispatches every due job and times out overdue runs. Returns when the next thing is due.
  SteadyTime tick();
  // Asks every in-flight run to stop (SIGTERM path).
  void cancel_all();
  std::size_t in_flight() const;
  // True once every job without a window has finished (or timed out) at least once.
  bool first_cycle_done() const;
  std::vector<JobStatus> status() const;

 private:
  struct Job {
    JobSpec spec;
    SteadyTime next_due;
    bool running = false;
    bool stuck = false;
    bool ever_finished = false;
    bool removed = false;
    SteadyTime started, deadline;
    std::shared_ptr<std::stop_source> stop;
    std::uint64_t runs = 0, timeouts = 0, failures = 0;
  };

  std::chrono::milliseconds jitter_for(const Job& j);
  SteadyTime window_due(const Job& j, SteadyTime candidate) const;
  void dispatch(const std::shared_ptr<Job>& j, JobSpec spec, SteadyTime now);
  void finished(const std::shared_ptr<Job>& j, const JobSpec& spec, ProbeResult r, SteadyTime end, WallTime wall_end);
  void update_stuck_locked();

  const Clock& clock_;
  Executor& executor_;
  ContextFactory make_context_;
  Sink sink_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::mt19937_64 rng_;
};

}  // namespace fsaudit
