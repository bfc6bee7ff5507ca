#pragma once
// One scheduler owns time (design note 3): intervals, jitter, deadlines, calendar windows,
// staggered starts, and no self-overlap of one probe on one target. Probes never sleep or keep
// timers of their own. The clock is injected; tick() is the whole algorithm, so tests drive it with a
// FakeClock and an InlineExecutor.
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/core/job_key.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/scheduler/thread_pool.hpp"
#include "daemon/core/window.hpp"

namespace fsaudit {

// Target::host(), allocated once.
inline const std::shared_ptr<const Target>& shared_host_target() {
  static const auto host = std::make_shared<const Target>(Target::host());
  return host;
}

struct JobSpec {
  std::shared_ptr<Probe> probe;
  // Shared by every job of the target: a copy per probe was a third of a job's memory at 10,000 targets.
  std::shared_ptr<const Target> target = shared_host_target();
  std::chrono::milliseconds interval{std::chrono::seconds(30)};
  std::chrono::milliseconds jitter{0};
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
  // Deep tests: only start inside it. Shared by every job of the probe (a copy per job was a
  // sixth of a job's memory).
  std::shared_ptr<const CalendarWindow> window;
  std::string key() const { return job_key(probe->name(), target->name); }
};

// Accounting of one probe type over all its targets. Exact: every run counts once in `runs`, and
// once in `failures` if it failed or timed out; a run that returns after its timeout counts nothing more.
struct ProbeTotals {
  std::uint64_t runs = 0, failures = 0, timeouts = 0;
  double seconds = 0;  // time spent in the probe's own runs (not queued), timed-out runs up to the deadline
  WallTime last_end{};
};

struct JobOutcome {
  // The spec the run ran with (shared, immutable: a reload replaces the job's pointer, never the spec).
  std::shared_ptr<const JobSpec> spec;
  ProbeResult result;
  double duration_seconds = 0;  // the run's own work: from its start on a worker, not from when it was due
  bool timed_out = false;   // reported at the deadline; the run itself may still be going
  bool late_finish = false; // a run that timed out has now returned: result is the timeout's, metrics empty
  WallTime finished_at;
  // Outcomes are delivered outside the scheduler's lock, so two of one job can arrive out of order
  // (a timeout and the late return in the same millisecond). `seq` grows with every state change
  // of every job; a consumer keeps the highest it has seen per probe and drops older ones.
  std::uint64_t seq = 0;
  bool stuck = false;        // the job's stuck state after this event
  ProbeTotals probe_totals;  // the probe type's totals after this event
  // The seq of the job's newest event (the job's own counter, shared; null for an outcome not made by
  // the scheduler).
  std::shared_ptr<const std::atomic<std::uint64_t>> job_seq;
  // A newer event of the same job exists: it is delivered too (or its job was removed), so a consumer
  // drops this one. Per job without remembering anything per job: at 10,000 filesystems a consumer's
  // map of the last seq of 30,000 jobs was 5 MB.
  bool superseded() const { return job_seq && job_seq->load(std::memory_order_acquire) > seq; }
};

struct JobStatus {
  std::string key;
  bool running = false;  // dispatched (queued or running) and not returned
  bool stuck = false;    // past its deadline and still running
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
  // True once a run has finished since the last tick() and its job is due again before the time
  // that tick() returned: the caller's sleep should end now (sub-second intervals, run_now).
  bool wake_requested() const { return wake_early_.load(std::memory_order_acquire); }
  // Runs the job `key` now, as one of its scheduled runs (same timeout, accounting and sink), and
  // then calls `done` with its outcome, after the sink. A job already running runs again as soon as
  // that run returns; the schedule continues one interval after the run. A job that a reload removes
  // before its run reports a failure. False (and `done` is never called) when no job has that key.
  bool run_now(const std::string& key, Sink done);
  // Asks every in-flight run to stop (SIGTERM path).
  void cancel_all();
  // Runs dispatched and not yet returned, plus finished runs whose outcome the sink has not yet
  // taken: zero means no worker is inside a probe or the sink.
  std::size_t in_flight() const;
  // True once every job without a window has finished (or timed out) at least once.
  bool first_cycle_done() const;
  // Keys of the jobs that hold READY back: never finished and not (yet) declared stuck.
  std::vector<std::string> first_runs_pending() const;
  std::vector<JobStatus> status() const;
  // Jobs past their deadline and still running, without a copy of every job's status.
  int stuck_jobs() const;

 private:
  struct BatchQueue;
  // Specs are shared, never changed in place: a run, its queue entry and its outcome hold the pointer
  // (copying the spec's strings per run was a visible share of a 1,000-target host's scheduling).
  using SpecPtr = std::shared_ptr<const JobSpec>;
  struct Job {
    SpecPtr spec;
    SteadyTime next_due;
    bool running = false;  // dispatched, not returned
    bool started = false;  // its run has begun on a worker (the deadline counts from then)
    bool stuck = false;
    bool ever_finished = false;
    bool removed = false;
    // The store may not hold this job's last metrics (first run, a failed or timed-out run): its next run
    // must publish afresh (ProbeContext::republish).
    bool republish = true;
    // What only a run in flight has, from its dispatch to its return. Out of line: at any moment a
    // handful of 30,000 jobs run, and these inline were a third of a job.
    struct Run {
      SteadyTime started_at, deadline;  // set when it starts on a worker
      std::shared_ptr<std::stop_source> stop = std::make_shared<std::stop_source>();
      std::shared_ptr<BatchQueue> batch;  // the queue this run waits in, for batched probes
    };
    std::unique_ptr<Run> run;  // null when not dispatched
    void request_stop() {
      if (run) run->stop->request_stop();
    }
    std::uint32_t runs = 0, timeouts = 0, failures = 0;
    // run_now callers: for the next run, for the one in flight. Out of line: nearly no job ever has one,
    // and two inline vectors were a fifth of a job.
    struct Waiters {
      std::vector<Sink> next, now;
    };
    std::unique_ptr<Waiters> waiting;
    Waiters& waiters() {
      if (!waiting) waiting = std::make_unique<Waiters>();
      return *waiting;
    }
    bool waits_next() const { return waiting && !waiting->next.empty(); }
    // Takes the callers of the run in flight (none when there are none).
    std::vector<Sink> take_waiting_now() { return waiting ? std::exchange(waiting->now, {}) : std::vector<Sink>{}; }
    std::uint64_t due_gen = 0;  // bumped whenever next_due is (re)queued or the job is dispatched
    std::atomic<std::uint64_t> seq{0};  // the seq of its newest outcome (JobOutcome::job_seq)
  };
  // A job's place in the due queue. Entries are never updated in place: a newer one (higher gen)
  // makes the older one stale, and stale entries are dropped when they reach the top.
  struct DueEntry {
    SteadyTime due;
    std::uint64_t gen;
    std::shared_ptr<Job> job;
    bool operator>(const DueEntry& o) const { return due > o.due; }
  };
  // Due runs of one batched probe, drained in order by one task (a second task takes over the rest
  // when a run in it gets stuck).
  struct BatchQueue {
    std::mutex mu;
    std::deque<std::pair<std::shared_ptr<Job>, SpecPtr>> items;
  };

  std::chrono::milliseconds jitter_for(const JobSpec& spec);
  SteadyTime window_due(const Job& j, SteadyTime candidate) const;
  SteadyTime grid_due(const Job& j, SteadyTime not_before);
  bool batched(const Job& j) const;
  void run_one(const std::shared_ptr<Job>& j, const SpecPtr& spec);
  void drain(const std::shared_ptr<BatchQueue>& q, bool prepare);
  void prepare_batch(const std::shared_ptr<BatchQueue>& q);
  void finished(const std::shared_ptr<Job>& j, const SpecPtr& spec, ProbeResult r, SteadyTime end, WallTime wall_end);
  void update_stuck_locked();
  void queue_locked(const std::shared_ptr<Job>& j);
  void drop_stale_locked();

  const Clock& clock_;
  Executor& executor_;
  ContextFactory make_context_;
  Sink sink_;
  mutable std::mutex mu_;
  // By a hash of the job's key (JobSpec::key()), each match checked against the spec: a map by the key
  // itself held a copy of it and a tree node per job, about 120 bytes of 30,000 jobs at 10,000
  // filesystems. Readers that list jobs sort them by key.
  using Jobs = std::unordered_multimap<std::size_t, std::shared_ptr<Job>>;
  Jobs jobs_;
  static Jobs::iterator find_job(Jobs& jobs, std::size_t hash, const std::string& key);
  // tick() looks only at what can need it: the earliest due jobs (a min-heap on next_due) and the
  // jobs in flight (for their deadlines), not at every job; with thousands of jobs a walk per tick
  // was a tenth of the daemon's CPU.
  std::priority_queue<DueEntry, std::vector<DueEntry>, std::greater<DueEntry>> due_;
  std::unordered_set<std::shared_ptr<Job>> in_flight_jobs_;  // jobs_ entries with running set
  std::map<std::string, ProbeTotals> totals_;      // by probe name; kept when jobs go away
  std::map<std::string, SteadyTime> grid_anchor_;  // by probe name, for batched probes
  std::uint64_t seq_ = 0;
  SteadyTime planned_wake_ = SteadyTime::max();  // what the last tick() returned: the caller sleeps until then
  std::atomic<bool> wake_early_{false};
  std::size_t runs_in_flight_ = 0;  // dispatched and not returned, also of jobs a reload removed since
  int delivering_ = 0;  // finished runs whose outcome is still being delivered (in_flight() counts them)
  int stuck_count_ = 0, reported_stuck_ = -1;  // stuck jobs in jobs_; the count last given to the executor
  std::mt19937_64 rng_;
};

}  // namespace fsaudit
