#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <set>
#include <deque>
#include <future>

#include "daemon/scheduler/run_budget.hpp"
#include "daemon/scheduler/scheduler.hpp"
#include "daemon/scheduler/thread_pool.hpp"

using namespace fsaudit;
using namespace std::chrono_literals;

namespace {

class CountingProbe : public Probe {
 public:
  explicit CountingProbe(std::string n = "counting") : name_(std::move(n)) {}
  std::string name() const override { return name_; }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    std::lock_guard l(mu);
    starts.push_back({t.name, ctx.clock.now()});
    requested.push_back(ctx.requested);
    return ProbeResult::ok({});
  }
  size_t count() {
    std::lock_guard l(mu);
    return starts.size();
  }
  std::mutex mu;
  std::vector<std::pair<std::string, SteadyTime>> starts;
  std::vector<bool> requested;  // ctx.requested of each run

 private:
  std::string name_;
};

// Holds submitted runs until the test releases them: a probe that is "still running".
class ManualExecutor : public Executor {
 public:
  void submit(std::function<void()> task) override { queue.push_back(std::move(task)); }
  void run_all() {
    auto q = std::move(queue);
    queue.clear();
    for (auto& t : q) t();
  }
  std::deque<std::function<void()>> queue;
};

struct Harness {
  FakeClock clock;
  HostPaths host;
  ToolPaths tools;
  ProcessRunner runner;
  std::vector<JobOutcome> outcomes;
  std::mutex mu;
  Scheduler make(Executor& ex, std::uint64_t seed = 42) {
    return Scheduler(
        clock, ex,
        [this](std::stop_token st, SteadyTime deadline) {
          return ProbeContext{host, runner, clock, tools, "/tmp", st, deadline};
        },
        [this](const JobOutcome& o) {
          std::lock_guard l(mu);
          outcomes.push_back(o);
        },
        seed);
  }
};

Target target(const std::string& n) {
  Target t;
  t.name = n;
  t.mountpoint = n;
  return t;
}

JobSpec job(std::shared_ptr<Probe> p, const std::string& t, std::chrono::milliseconds interval,
            std::chrono::milliseconds jitter = 0ms, std::chrono::milliseconds timeout = 5s) {
  JobSpec j;
  j.probe = std::move(p);
  j.target = std::make_shared<const Target>(target(t));
  j.interval = interval;
  j.jitter = jitter;
  j.timeout = timeout;
  return j;
}

}  // namespace

TEST(Scheduler, RunsAtItsInterval) {
  Harness h;
  InlineExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 10s)});
  s.tick();
  EXPECT_EQ(p->starts.size(), 1u);
  h.clock.advance(9s);
  s.tick();
  EXPECT_EQ(p->starts.size(), 1u);
  h.clock.advance(1s);
  auto next = s.tick();
  EXPECT_EQ(p->starts.size(), 2u);
  EXPECT_GT(next, h.clock.now());
  EXPECT_LE(next, h.clock.now() + 10s);
  EXPECT_TRUE(s.first_cycle_done());
}

TEST(Scheduler, JitterStaysWithinBounds) {
  Harness h;
  InlineExecutor ex;
  auto s = h.make(ex, 7);
  auto p = std::make_shared<CountingProbe>();
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 20; ++i) jobs.push_back(job(p, "/t" + std::to_string(i), 10s, 2s));
  auto t0 = h.clock.now();
  s.set_jobs(std::move(jobs));
  for (int step = 0; step < 600; ++step) {  // 60 s in 100 ms steps
    s.tick();
    h.clock.advance(100ms);
  }
  std::map<std::string, std::vector<SteadyTime>> by_target;
  for (auto& [t, when] : p->starts) by_target[t].push_back(when);
  ASSERT_EQ(by_target.size(), 20u);
  std::set<long long> first_offsets;
  for (auto& [t, times] : by_target) {
    ASSERT_GE(times.size(), 5u) << t;
    EXPECT_LE(times[0] - t0, 2s) << "first run of " << t << " later than the jitter";
    first_offsets.insert(std::chrono::duration_cast<std::chrono::milliseconds>(times[0] - t0).count());
    for (size_t i = 1; i < times.size(); ++i) {
      auto gap = times[i] - times[i - 1];
      // 100 ms tick granularity on top of [interval, interval + jitter].
      EXPECT_GE(gap, 10s - 100ms) << t;
      EXPECT_LE(gap, 12s + 100ms) << t;
    }
  }
  EXPECT_GT(first_offsets.size(), 5u) << "starts are not spread";
}

namespace {
// A run that blocks until released, on a real worker thread, while the test moves a fake clock.
struct Hanging : Probe {
  std::string name() const override { return "hung"; }
  ProbeResult run(const Target&, ProbeContext& ctx) override {
    std::unique_lock l(mu);
    ++entered;
    cv.notify_all();
    cv.wait(l, [&] { return released > 0; });
    --released;
    // What a runner reports for a command it killed at the run's deadline.
    return ctx.stop.stop_requested() ? ProbeResult::failed("killed at its timeout") : ProbeResult::ok({});
  }
  void wait_entered(int n) {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return entered >= n; });
  }
  void release() {
    std::lock_guard l(mu);
    ++released;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0, released = 0;
};
}  // namespace

TEST(Scheduler, TimeoutIsReportedAndTheRunNeverOverlapsItself) {
  Harness h;
  ThreadPool pool(1);
  auto s = h.make(pool);
  auto p = std::make_shared<Hanging>();
  s.set_jobs({job(p, "/a", 10s, 0ms, 5s)});
  s.tick();
  p->wait_entered(1);
  h.clock.advance(6s);
  s.tick();
  {
    std::lock_guard l(h.mu);
    ASSERT_EQ(h.outcomes.size(), 1u);
    EXPECT_TRUE(h.outcomes[0].timed_out);
    EXPECT_TRUE(h.outcomes[0].stuck);
    EXPECT_EQ(h.outcomes[0].result.reason, "timed out after 5s (still running; not started again until it returns)");
  }
  EXPECT_TRUE(s.first_cycle_done());  // a stuck probe must not hold back READY
  // Long past the interval, still no second run while the first has not returned.
  for (int i = 0; i < 10; ++i) {
    h.clock.advance(10s);
    s.tick();
  }
  EXPECT_EQ(s.in_flight(), 1u);
  auto st = s.status();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_TRUE(st[0].stuck);
  EXPECT_EQ(s.stuck_jobs(), 1);
  // The run returns: its late return clears `stuck`, and the job runs again one interval later.
  p->release();
  while (s.in_flight() > 0) std::this_thread::sleep_for(1ms);
  {
    std::lock_guard l(h.mu);
    ASSERT_EQ(h.outcomes.size(), 2u);
    EXPECT_TRUE(h.outcomes[1].late_finish);
    EXPECT_FALSE(h.outcomes[1].stuck);
    EXPECT_GT(h.outcomes[1].seq, h.outcomes[0].seq);
    EXPECT_EQ(h.outcomes[1].probe_totals.runs, 1u) << "a late return is not a second run";
    EXPECT_EQ(h.outcomes[1].probe_totals.failures, 1u) << "a late return is not a second failure";
  }
  s.tick();
  EXPECT_EQ(s.in_flight(), 0u);
  h.clock.advance(10s);
  s.tick();
  EXPECT_EQ(s.in_flight(), 1u);
  p->release();
  while (s.in_flight() > 0) std::this_thread::sleep_for(1ms);
}

// The deadline and the runner's kill in the same millisecond: the run returns while the scheduler is
// reporting its timeout, and the two outcomes reach the consumer in the wrong order. The accounting
// stays exact (one run, one failure, one timeout per hung run) and the consumer, keeping the highest
// seq as the daemon does, ends with stuck cleared.
TEST(Scheduler, TimeoutAndLateReturnInTheSameMillisecondCountOnceAndEndUnstuck) {
  FakeClock clock;
  HostPaths host;
  ToolPaths tools;
  ProcessRunner runner;
  ThreadPool pool(1);
  auto p = std::make_shared<Hanging>();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<JobOutcome> delivered;  // in delivery order
  bool late_seen = false;
  Scheduler s(
      clock, pool, [&](std::stop_token st, SteadyTime d) { return ProbeContext{host, runner, clock, tools, "/tmp", st, d}; },
      [&](const JobOutcome& o) {
        std::unique_lock l(mu);
        if (o.timed_out) {
          // The runner kills the command now: the run returns before this outcome is delivered.
          l.unlock();
          p->release();
          l.lock();
          cv.wait(l, [&] { return late_seen; });
        }
        if (o.late_finish) late_seen = true;
        delivered.push_back(o);
        cv.notify_all();
      },
      42);
  s.set_jobs({job(p, "/a", 10s, 0ms, 5s)});
  std::uint64_t consumer_seq = 0;
  bool consumer_stuck = false;
  for (int run = 1; run <= 4; ++run) {
    {
      std::lock_guard l(mu);
      late_seen = false;
    }
    s.tick();
    p->wait_entered(run);
    clock.advance(5s);  // exactly the deadline
    s.tick();
    while (s.in_flight() > 0) std::this_thread::sleep_for(1ms);
    std::lock_guard l(mu);
    ASSERT_EQ(delivered.size(), static_cast<size_t>(2 * run));
    EXPECT_TRUE(delivered[2 * run - 2].late_finish) << "the race was not reproduced";
    EXPECT_TRUE(delivered[2 * run - 1].timed_out);
    for (size_t i = 2 * run - 2; i < delivered.size(); ++i) {
      if (delivered[i].superseded()) continue;  // the daemon's rule
      EXPECT_GT(delivered[i].seq, consumer_seq);
      consumer_seq = delivered[i].seq;
      consumer_stuck = delivered[i].stuck;
    }
    EXPECT_FALSE(consumer_stuck) << "run " << run << ": stuck stayed 1 after the run returned";
    clock.advance(10s);
  }
  std::lock_guard l(mu);
  ProbeTotals last;
  for (const auto& o : delivered)
    if (o.seq == consumer_seq) last = o.probe_totals;
  EXPECT_EQ(last.runs, 4u);
  EXPECT_EQ(last.failures, 4u) << "4 hung runs, 4 failures";
  EXPECT_EQ(last.timeouts, 4u);
  auto st = s.status();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].failures, 4u);
  EXPECT_FALSE(st[0].stuck);
  EXPECT_EQ(s.stuck_jobs(), 0);
}

// The consumer's rule without remembering anything per job: an outcome is superseded once its own
// job has a newer one, never by another job's.
TEST(Scheduler, AnOutcomeIsSupersededOnlyByANewerOneOfItsOwnJob) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 10s, 0ms, 5s), job(p, "/b", 10s, 0ms, 5s)});
  s.tick();
  ex.run_all();
  ASSERT_EQ(h.outcomes.size(), 2u);
  EXPECT_FALSE(h.outcomes[0].superseded()) << "a newer outcome of the other job does not supersede it";
  EXPECT_FALSE(h.outcomes[1].superseded());
  h.clock.advance(10s);
  s.tick();
  ex.run_all();
  ASSERT_EQ(h.outcomes.size(), 4u);
  for (int i : {0, 1}) EXPECT_TRUE(h.outcomes[i].superseded()) << i;
  for (int i : {2, 3}) EXPECT_FALSE(h.outcomes[i].superseded()) << i;
  JobOutcome made_elsewhere;  // not the scheduler's: nothing to compare with
  EXPECT_FALSE(made_elsewhere.superseded());
}

TEST(Scheduler, QueueTimeIsNotTheProbesDurationNorItsTimeout) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 10s, 0ms, 5s)});
  s.tick();
  h.clock.advance(8s);  // queued behind busy workers, past its timeout: not a timeout, it has not started
  s.tick();
  EXPECT_TRUE(h.outcomes.empty());
  ex.run_all();
  ASSERT_EQ(h.outcomes.size(), 1u);
  EXPECT_FALSE(h.outcomes[0].timed_out);
  EXPECT_EQ(h.outcomes[0].duration_seconds, 0.0) << "the 8 s in the queue were counted as the probe's work";
}

TEST(Scheduler, StopTokenFiresAtTheDeadline) {
  Harness h;
  ThreadPool pool(1);
  auto s = h.make(pool);
  struct Grab : Probe {
    std::string name() const override { return "grab"; }
    ProbeResult run(const Target&, ProbeContext& ctx) override {
      std::unique_lock l(mu);
      entered = true;
      cv.notify_all();
      cv.wait(l, [&] { return ctx.stop.stop_requested(); });
      stopped = true;
      return ProbeResult::ok({});
    }
    std::mutex mu;
    std::condition_variable_any cv;
    bool entered = false, stopped = false;
  };
  auto g = std::make_shared<Grab>();
  s.set_jobs({job(g, "/a", 10s, 0ms, 5s)});
  s.tick();
  {
    std::unique_lock l(g->mu);
    g->cv.wait(l, [&] { return g->entered; });
  }
  h.clock.advance(4s);
  s.tick();
  EXPECT_FALSE(g->stopped);
  h.clock.advance(2s);
  s.tick();  // past the deadline: the token fires
  for (int i = 0; i < 100 && s.in_flight() > 0; ++i) {
    g->cv.notify_all();
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(g->stopped);
}

// capacity, mount and other sysfs/statfs probes: one task per cycle for all targets, one grid.
TEST(Scheduler, BatchedProbeRunsAllTargetsInOneTaskPerCycle) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex, 3);
  struct Light : CountingProbe {
    Light() : CountingProbe("light") {}
    bool batched() const override { return true; }
  };
  auto p = std::make_shared<Light>();
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 100; ++i) jobs.push_back(job(p, "/t" + std::to_string(i), 10s, 2s));
  s.set_jobs(std::move(jobs));
  int tasks = 0;
  for (int step = 0; step < 350; ++step) {  // 35 s in 100 ms steps
    s.tick();
    tasks += static_cast<int>(ex.queue.size());
    ex.run_all();
    h.clock.advance(100ms);
  }
  EXPECT_EQ(p->starts.size(), 400u) << "every target once per 10 s cycle (4 cycles in 35 s from a jitter <= 2 s)";
  EXPECT_EQ(tasks, 4) << "one wake-up per cycle, not one per target";
  std::set<std::string> first_cycle;
  for (size_t i = 0; i < 100; ++i) first_cycle.insert(p->starts[i].first);
  EXPECT_EQ(first_cycle.size(), 100u);
  std::lock_guard l(h.mu);
  EXPECT_EQ(h.outcomes.size(), 400u);  // and a result per target
}

// A batched probe hears of a cycle's due targets once, before their runs (its chance to fetch them in
// one go: the capacity probe's statfs calls); a task that takes over after a stuck run does not ask again.
TEST(Scheduler, ABatchIsPreparedOnceWithItsDueTargetsBeforeTheirRuns) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex, 3);
  struct Prepared : CountingProbe {
    Prepared() : CountingProbe("prepared") {}
    bool batched() const override { return true; }
    void prepare_batch(const std::vector<const Target*>& targets, ProbeContext& ctx) override {
      std::lock_guard l(mu);
      std::set<std::string> names;
      for (const Target* t : targets) names.insert(t->name);
      prepares.push_back({names, starts.size()});
      deadlines.push_back(ctx.deadline - ctx.clock.now());
    }
    std::vector<std::pair<std::set<std::string>, size_t>> prepares;  // targets, runs before it
    std::vector<SteadyTime::duration> deadlines;
  };
  auto p = std::make_shared<Prepared>();
  auto other = std::make_shared<CountingProbe>("other");
  s.set_jobs({job(p, "/a", 10s, 0ms, 3s), job(p, "/b", 10s, 0ms, 3s), job(p, "/c", 10s, 0ms, 3s),
              job(other, "/a", 10s)});
  for (int step = 0; step < 25; ++step) {  // 25 s: cycles at 0, 10 and 20 s
    s.tick();
    ex.run_all();
    h.clock.advance(1s);
  }
  ASSERT_EQ(p->prepares.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p->prepares[i].first, (std::set<std::string>{"/a", "/b", "/c"}));
    EXPECT_EQ(p->prepares[i].second, 3 * i) << "prepared before the cycle's runs";
    EXPECT_EQ(p->deadlines[i], std::chrono::duration_cast<SteadyTime::duration>(3s)) << "the runs' timeout";
  }
  EXPECT_EQ(p->starts.size(), 9u);
}

TEST(Scheduler, ABatchedRunThatHangsHoldsUpOnlyItsOwnTarget) {
  Harness h;
  ThreadPool pool(1);
  auto s = h.make(pool);
  struct LightHang : Hanging {
    bool batched() const override { return true; }
    std::string name() const override { return "light"; }
    ProbeResult run(const Target& t, ProbeContext& ctx) override {
      if (t.name == "/dead") return Hanging::run(t, ctx);
      std::lock_guard l(done_mu);
      done.push_back(t.name);
      return ProbeResult::ok({});
    }
    void prepare_batch(const std::vector<const Target*>&, ProbeContext&) override {
      std::lock_guard l(done_mu);
      ++prepares;
    }
    std::mutex done_mu;
    std::vector<std::string> done;
    int prepares = 0;
  };
  auto p = std::make_shared<LightHang>();
  s.set_jobs({job(p, "/dead", 10s, 0ms, 1s), job(p, "/ok1", 10s, 0ms, 1s), job(p, "/ok2", 10s, 0ms, 1s)});
  s.tick();
  p->wait_entered(1);
  h.clock.advance(2s);
  s.tick();  // /dead is stuck: the rest of the batch goes on in another task
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard l(p->done_mu);
      if (p->done.size() == 2) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  {
    std::lock_guard l(p->done_mu);
    EXPECT_EQ(p->done.size(), 2u);
    EXPECT_EQ(p->prepares, 1) << "the task that took over the rest of the batch prepared it again";
  }
  p->release();
  while (s.in_flight() > 0) std::this_thread::sleep_for(1ms);
}

TEST(Scheduler, SlowProbeDoesNotDelayOthers) {
  Harness h;
  ThreadPool pool(1);
  std::promise<void> release;
  auto released = release.get_future().share();
  struct Blocking : Probe {
    std::shared_future<void> f;
    explicit Blocking(std::shared_future<void> f) : f(std::move(f)) {}
    std::string name() const override { return "blocking"; }
    ProbeResult run(const Target&, ProbeContext&) override {
      f.wait();  // like statfs on a dead mount: ignores the stop token
      return ProbeResult::ok({});
    }
  };
  auto fast = std::make_shared<CountingProbe>("fast");
  auto s = h.make(pool);
  s.set_jobs({job(std::make_shared<Blocking>(released), "/dead", 10s, 0ms, 1s), job(fast, "/ok", 1s, 0ms, 1s)});
  s.tick();
  // The only worker is blocked; once the deadline passes the pool may grow by the stuck count.
  for (int i = 0; i < 50 && fast->count() < 3; ++i) {
    h.clock.advance(1s);
    s.tick();
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GE(fast->count(), 3u) << "the fast probe was held up by the stuck one";
  EXPECT_EQ(pool.threads(), 2);
  release.set_value();
  s.cancel_all();
  while (s.in_flight() > 0) std::this_thread::sleep_for(5ms);
}

TEST(Scheduler, WindowedJobsWaitForTheirWindow) {
  Harness h;  // FakeClock wall starts at 1,700,000,000 + 1 h = 2023-11-14 23:13:20 UTC (a Tuesday)
  InlineExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>("deep");
  auto j = job(p, "/a", std::chrono::hours(24));
  j.window = std::make_shared<const CalendarWindow>(*CalendarWindow::parse("01:00-02:00"));
  // Windows are local time; pin the test to an offset-free reading by checking the computed due time.
  s.set_jobs({j});
  s.tick();
  EXPECT_TRUE(p->starts.empty() || j.window->contains(h.clock.wall()));
  EXPECT_TRUE(s.first_cycle_done()) << "windowed deep tests do not hold back READY";
  auto tick_for = [&](int hours) {
    for (int i = 0; i < hours * 6; ++i) {  // 10-minute steps
      h.clock.advance(10min);
      s.tick();
      for (auto& [t, started] : p->starts) {
        auto wall = h.clock.wall() - std::chrono::duration_cast<std::chrono::system_clock::duration>(h.clock.now() - started);
        EXPECT_TRUE(j.window->contains(wall)) << "started outside its window";
      }
    }
  };
  tick_for(20);
  ASSERT_EQ(p->starts.size(), 1u);  // exactly one window opened in these 20 hours
  tick_for(24);
  ASSERT_EQ(p->starts.size(), 2u);  // and the next day's, one interval later
}

TEST(Scheduler, RemovedJobsAreNotReported) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 10s)});
  s.tick();
  s.set_jobs({});
  ex.run_all();
  EXPECT_TRUE(h.outcomes.empty());
}

// A run asked for now is one of the job's runs: counted like a scheduled one, reported to the sink
// first, then to the caller; the schedule continues one interval after it.
TEST(Scheduler, RunNowIsAScheduledRunOfTheJob) {
  Harness h;
  InlineExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 1h)});
  s.tick();
  ASSERT_EQ(p->count(), 1u);
  h.clock.advance(10min);
  std::vector<JobOutcome> got;
  std::size_t sink_seen_before_caller = 0;
  ASSERT_TRUE(s.run_now(job(p, "/a", 1h).key(), [&](const JobOutcome& o) {
    got.push_back(o);
    sink_seen_before_caller = h.outcomes.size();
  }));
  EXPECT_TRUE(got.empty()) << "the run starts from the scheduler's loop, not inside run_now";
  s.tick();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(p->count(), 2u);
  EXPECT_EQ(got[0].result.outcome, Outcome::ok);
  EXPECT_EQ(got[0].probe_totals.runs, 2u);
  EXPECT_EQ(sink_seen_before_caller, 2u);
  EXPECT_EQ(s.status()[0].runs, 2u);
  // Next scheduled run: one interval after the manual one, not at the old time.
  h.clock.advance(55min);
  s.tick();
  EXPECT_EQ(p->count(), 2u);
  h.clock.advance(5min);
  s.tick();
  EXPECT_EQ(p->count(), 3u);
  EXPECT_EQ(got.size(), 1u) << "a caller hears about its own run only";
  EXPECT_EQ(p->requested, (std::vector<bool>{false, true, false})) << "only the run asked for is marked requested";
  EXPECT_FALSE(s.run_now("nope\x1f/a", [](const JobOutcome&) { ADD_FAILURE(); }));
}

// Asked while a run is in flight: the caller gets a fresh run right after it, never the one that
// started before the request (a canary run just after `canary init` must not report the old run).
TEST(Scheduler, RunNowWhileRunningRunsAgainAfterwards) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 1h)});
  s.tick();
  ASSERT_EQ(ex.queue.size(), 1u);
  int calls = 0;
  ASSERT_TRUE(s.run_now(job(p, "/a", 1h).key(), [&](const JobOutcome&) { ++calls; }));
  s.tick();
  EXPECT_EQ(ex.queue.size(), 1u) << "no overlap with the run in flight";
  ex.run_all();
  EXPECT_EQ(calls, 0);
  s.tick();
  ASSERT_EQ(ex.queue.size(), 1u) << "the requested run starts as soon as the previous one returned";
  ex.run_all();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(p->count(), 2u);
}

// Timed out: the caller hears the timeout. Removed by a reload before it ran: the caller hears why.
TEST(Scheduler, RunNowReportsTimeoutsAndRemovals) {
  Harness h;
  ThreadPool pool(1);
  auto s = h.make(pool);
  auto p = std::make_shared<Hanging>();
  s.set_jobs({job(p, "/a", 1h, 0ms, 5s)});
  std::vector<std::string> reasons;
  std::mutex mu;
  auto record = [&](const JobOutcome& o) {
    std::lock_guard l(mu);
    reasons.push_back(o.result.reason);
  };
  ASSERT_TRUE(s.run_now(job(p, "/a", 1h).key(), record));
  s.tick();
  p->wait_entered(1);
  h.clock.advance(6s);
  s.tick();
  {
    std::lock_guard l(mu);
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("timed out after 5s"), std::string::npos) << reasons[0];
  }
  ASSERT_TRUE(s.run_now(job(p, "/a", 1h).key(), record));  // waits for the stuck run to return
  s.set_jobs({});
  {
    std::lock_guard l(mu);
    ASSERT_EQ(reasons.size(), 2u);
    EXPECT_NE(reasons[1].find("no longer scheduled"), std::string::npos) << reasons[1];
  }
  p->release();
  while (s.in_flight() > 0) std::this_thread::sleep_for(1ms);
}

// A run that finishes while the caller sleeps until tick()'s answer, and whose job is due before
// that, asks for an early wake; one due later does not.
TEST(Scheduler, AFinishedRunDueBeforeThePlannedWakeAsksForAWake) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex);
  auto fast = std::make_shared<CountingProbe>("fast");
  auto slow = std::make_shared<CountingProbe>("slow");
  s.set_jobs({job(fast, "/a", 100ms, 0ms, 5s), job(slow, "/b", 30s, 0ms, 5s)});
  auto next = s.tick();  // both dispatched: nothing else due, so the planned wake is far away
  EXPECT_GE(next, h.clock.now() + 1s);
  EXPECT_FALSE(s.wake_requested());
  EXPECT_EQ(s.in_flight(), 2u);
  ex.run_all();  // both return: "fast" is due again in 100 ms, before the planned wake
  EXPECT_TRUE(s.wake_requested());
  EXPECT_EQ(s.in_flight(), 0u);
  next = s.tick();
  EXPECT_FALSE(s.wake_requested()) << "tick() takes the request";
  EXPECT_LE(next, h.clock.now() + 100ms);
  h.clock.advance(100ms);
  s.tick();
  ex.run_all();  // "fast" returns; the planned wake was its own due time, "slow" is not due
  EXPECT_TRUE(s.wake_requested());
  h.clock.advance(100ms);
  s.tick();
  ex.run_all();
  EXPECT_EQ(fast->count(), 3u);
  EXPECT_EQ(slow->count(), 1u);
}

// The outcome of a finished run is part of the run: in_flight() and first_cycle_done() count it
// until the sink has returned (a shutdown or --once that saw 0 could otherwise tear the sink down
// under a worker still delivering, or print a store without the last result).
TEST(Scheduler, InFlightCountsAnOutcomeUntilTheSinkHasTakenIt) {
  FakeClock clock;
  HostPaths host;
  ToolPaths tools;
  ProcessRunner runner;
  std::promise<void> in_sink, release;
  auto release_f = release.get_future().share();
  auto pool = std::make_unique<ThreadPool>(1);
  std::atomic<int> delivered{0};
  Scheduler s(
      clock, *pool,
      [&](std::stop_token st, SteadyTime deadline) { return ProbeContext{host, runner, clock, tools, "/tmp", st, deadline}; },
      [&](const JobOutcome&) {
        in_sink.set_value();
        release_f.wait();
        ++delivered;
      },
      42);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 10s)});
  s.tick();
  in_sink.get_future().wait();  // the run has returned; its outcome is in the sink
  EXPECT_EQ(s.in_flight(), 1u);
  EXPECT_FALSE(s.first_cycle_done());
  release.set_value();
  for (int i = 0; i < 5000 && s.in_flight() != 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(s.in_flight(), 0u);
  EXPECT_EQ(delivered.load(), 1);
  EXPECT_TRUE(s.first_cycle_done());
  pool.reset();  // workers before the scheduler, as the daemon does
}

// The due queue across reloads: jobs kept, removed, added and re-timed while some are in flight run
// exactly on their (new) schedule; a removed job never runs again; none runs twice at once or is lost.
TEST(Scheduler, ReloadsWithRunsInFlightKeepEveryScheduleExact) {
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<CountingProbe>();
  s.set_jobs({job(p, "/a", 10s), job(p, "/b", 10s), job(p, "/c", 10s)});
  s.tick();
  ASSERT_EQ(ex.queue.size(), 3u);
  // Reload while all three are in flight: /b goes, /c gets 4 s, /d is new.
  s.set_jobs({job(p, "/a", 10s), job(p, "/c", 4s), job(p, "/d", 10s)});
  s.tick();
  ASSERT_EQ(ex.queue.size(), 4u) << "the new job /d is dispatched at once; nothing in flight is dispatched again";
  ex.run_all();
  std::map<std::string, int> runs;
  for (int step = 0; step < 200; ++step) {  // 20 s in 100 ms steps
    h.clock.advance(100ms);
    s.tick();
    ex.run_all();
  }
  for (auto& [t, when] : p->starts) ++runs[t];
  EXPECT_EQ(runs["/a"], 3) << "t=0, 10, 20";
  EXPECT_EQ(runs["/b"], 0) << "removed while its first run waited in the queue: it never runs";
  EXPECT_EQ(runs["/c"], 6) << "t=0, then every 4 s after the reload: 4, 8, 12, 16, 20";
  EXPECT_EQ(runs["/d"], 3) << "t=0, 10, 20";
  // A thousand jobs on mixed intervals: each runs exactly as often as its interval says.
  Harness h2;
  InlineExecutor inl;
  auto s2 = h2.make(inl);
  auto q = std::make_shared<CountingProbe>();
  std::vector<JobSpec> many;
  for (int i = 0; i < 1000; ++i) many.push_back(job(q, "/m" + std::to_string(i), std::chrono::seconds(1 + i % 7)));
  s2.set_jobs(std::move(many));
  for (int step = 0; step <= 420; ++step) {  // 0..42 s in 100 ms steps
    s2.tick();
    h2.clock.advance(100ms);
  }
  std::map<std::string, int> count;
  for (auto& [t, when] : q->starts) ++count[t];
  ASSERT_EQ(count.size(), 1000u);
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(count["/m" + std::to_string(i)], 42 / (1 + i % 7) + 1) << "/m" << i;
}

namespace {
// Returns what the test scripts, run by run, and records each run's ctx.republish.
struct Scripted : Probe {
  std::string name() const override { return "scripted"; }
  ProbeResult run(const Target&, ProbeContext& ctx) override {
    republish.push_back(ctx.republish);
    if (script.empty()) return ProbeResult::same_as_last();
    auto r = std::move(script.front());
    script.pop_front();
    return r;
  }
  std::deque<ProbeResult> script;
  std::vector<bool> republish;
};

metrics::Batch one_gauge() {
  metrics::Batch b;
  b.gauge("fsaudit_test_value", "A value.", {}, 1);
  return b;
}
}  // namespace

// A probe may keep its last metrics (same_as_last) only while the consumer still holds them: not on
// a job's first run, and not after a failed run (which published only what it could).
TEST(Scheduler, RepublishIsAskedOnAJobsFirstRunAndAfterAFailure) {
  Harness h;
  InlineExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<Scripted>();
  p->script.push_back(ProbeResult::ok(one_gauge()));
  p->script.push_back(ProbeResult::same_as_last());
  p->script.push_back(ProbeResult::failed("broken"));
  p->script.push_back(ProbeResult::ok(one_gauge()));
  p->script.push_back(ProbeResult::same_as_last());
  s.set_jobs({job(p, "/a", 10s)});
  for (int i = 0; i < 5; ++i) {
    s.tick();
    h.clock.advance(10s);
  }
  EXPECT_EQ(p->republish, (std::vector<bool>{true, false, false, true, false}));
  ASSERT_EQ(h.outcomes.size(), 5u);
  EXPECT_FALSE(h.outcomes[0].result.unchanged);
  EXPECT_TRUE(h.outcomes[1].result.unchanged);
  EXPECT_EQ(h.outcomes[1].result.outcome, Outcome::ok);
  EXPECT_EQ(h.outcomes[2].result.outcome, Outcome::failed);
  EXPECT_TRUE(h.outcomes[4].result.unchanged);
}

TEST(Scheduler, KeepingMetricsWhereTheyMustBeRepublishedIsAFailure) {
  Harness h;
  InlineExecutor ex;
  auto s = h.make(ex);
  auto p = std::make_shared<Scripted>();  // empty script: answers same_as_last from the first run on
  s.set_jobs({job(p, "/a", 10s)});
  s.tick();
  ASSERT_EQ(h.outcomes.size(), 1u);
  EXPECT_EQ(h.outcomes[0].result.outcome, Outcome::failed);
  EXPECT_FALSE(h.outcomes[0].result.unchanged);
  EXPECT_NE(h.outcomes[0].result.reason.find("afresh"), std::string::npos) << h.outcomes[0].result.reason;
  h.clock.advance(10s);
  s.tick();
  EXPECT_EQ(p->republish, (std::vector<bool>{true, true}));  // and the next run is asked again
}

namespace {
struct HangingRecorder : Hanging {
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    {
      std::lock_guard l(mu);
      republish.push_back(ctx.republish);
    }
    return Hanging::run(t, ctx);
  }
  std::vector<bool> republish;
};
}  // namespace

// A timed-out run's metrics are dropped (its outcome says timed_out, then late_finish): the next run
// must publish afresh even though the late return itself was ok.
TEST(Scheduler, ARunAfterATimeoutMustRepublish) {
  Harness h;
  ThreadPool pool(1);
  auto s = h.make(pool);
  auto p = std::make_shared<HangingRecorder>();
  s.set_jobs({job(p, "/a", 10s, 0ms, 5s)});
  auto finish_run = [&] {
    p->release();
    while (s.in_flight() > 0) std::this_thread::sleep_for(1ms);
  };
  s.tick();  // run 1: ok
  p->wait_entered(1);
  finish_run();
  h.clock.advance(10s);
  s.tick();  // run 2: hangs past its timeout, returns late
  p->wait_entered(2);
  h.clock.advance(6s);
  s.tick();
  finish_run();
  h.clock.advance(10s);
  s.tick();  // run 3
  p->wait_entered(3);
  finish_run();
  std::lock_guard l(p->mu);
  EXPECT_EQ(p->republish, (std::vector<bool>{true, false, true}));
}

// The host's ceiling on per-filesystem runs: 1,000 filesystems of two light probes (30 s and 15 s)
// want 100 runs a second; a budget of 20 stretches both intervals by 5 and the scheduler then really
// runs 20 a second, every filesystem still looked at by both probes. Host-wide jobs are not stretched.
TEST(RunBudget, PastTheCeilingEveryFilesystemIntervalStretchesByOneFactorAndTheRunsPerSecondHold) {
  struct Light : CountingProbe {
    explicit Light(std::string n) : CountingProbe(std::move(n)) {}
    bool batched() const override { return true; }
  };
  auto capacity = std::make_shared<Light>("capacity");
  auto mount = std::make_shared<Light>("mount");
  auto hostwide = std::make_shared<CountingProbe>("kernel_log");
  auto make_jobs = [&](int n) {
    std::vector<JobSpec> jobs;
    for (int i = 0; i < n; ++i) {
      jobs.push_back(job(capacity, "/t" + std::to_string(i), 30s));
      jobs.push_back(job(mount, "/t" + std::to_string(i), 15s));
    }
    JobSpec host;
    host.probe = hostwide;
    host.interval = 5s;
    jobs.push_back(host);
    return jobs;
  };

  auto within = make_jobs(100);  // 10 runs a second: under the ceiling, nothing changes
  auto plan = apply_run_budget(within, RunBudget{20});
  EXPECT_NEAR(plan.demand, 10.0, 1e-9);
  EXPECT_EQ(plan.stretch, 1.0);
  EXPECT_EQ(within[0].interval, 30s);
  EXPECT_EQ(plan.interval_seconds.at("mount"), 15.0);

  auto jobs = make_jobs(1000);
  plan = apply_run_budget(jobs, RunBudget{20});
  EXPECT_NEAR(plan.demand, 100.0, 1e-9);
  EXPECT_EQ(plan.stretch, 5.0);
  EXPECT_EQ(plan.interval_seconds.at("capacity"), 150.0);
  EXPECT_EQ(plan.interval_seconds.at("mount"), 75.0);
  EXPECT_FALSE(plan.interval_seconds.count("kernel_log")) << "host-wide jobs are not per-filesystem runs";
  EXPECT_EQ(jobs.back().interval, 5s);

  auto unlimited = make_jobs(1000);
  EXPECT_EQ(apply_run_budget(unlimited, RunBudget{0}).stretch, 1.0);
  EXPECT_EQ(unlimited[0].interval, 30s);

  // A few filesystems more or less near the ceiling keep the factor (steps of 1/8).
  auto more = make_jobs(1010);
  EXPECT_EQ(apply_run_budget(more, RunBudget{20}).stretch, 5.125);
  auto fewer = make_jobs(990);
  EXPECT_EQ(apply_run_budget(fewer, RunBudget{20}).stretch, 5.0);

  // What the scheduler then does: 10 minutes after the first cycle, 20 per-filesystem runs a second.
  Harness h;
  ManualExecutor ex;
  auto s = h.make(ex, 5);
  s.set_jobs(std::move(jobs));
  auto drive = [&](std::chrono::seconds for_how_long) {
    for (auto t = h.clock.now() + for_how_long; h.clock.now() < t; h.clock.advance(100ms)) {
      s.tick();
      ex.run_all();
    }
  };
  drive(150s);
  auto c0 = capacity->count(), m0 = mount->count(), k0 = hostwide->count();
  drive(600s);
  double per_second = static_cast<double>(capacity->count() - c0 + mount->count() - m0) / 600.0;
  EXPECT_NEAR(per_second, 20.0, 20.0 * 0.05);
  EXPECT_NEAR(static_cast<double>(hostwide->count() - k0), 120.0, 2.0) << "the host-wide probe keeps its 5 s";
  std::set<std::string> seen_by_capacity;
  for (std::size_t i = c0; i < capacity->count(); ++i) seen_by_capacity.insert(capacity->starts[i].first);
  EXPECT_EQ(seen_by_capacity.size(), 1000u) << "every filesystem still looked at";
}

// A host-wide probe whose pass walks every filesystem (the scrub pass, the disk inventory) is
// stretched by the same factor, without counting toward the demand; one that does not keeps its
// interval, and under the ceiling nothing moves.
TEST(RunBudget, AHostWideSweepIsStretchedAlongAndNotCounted) {
  struct Sweep : CountingProbe {
    Sweep() : CountingProbe("scrub") {}
    bool sweeps_targets() const override { return true; }
  };
  auto capacity = std::make_shared<CountingProbe>("capacity");
  auto sweep = std::make_shared<Sweep>();
  auto other = std::make_shared<CountingProbe>("kernel_log");
  auto make_jobs = [&](int n) {
    std::vector<JobSpec> jobs;
    for (int i = 0; i < n; ++i) jobs.push_back(job(capacity, "/t" + std::to_string(i), 10s));
    JobSpec s;
    s.probe = sweep;
    s.interval = 30s;
    jobs.push_back(s);
    JobSpec k;
    k.probe = other;
    k.interval = 5s;
    jobs.push_back(k);
    return jobs;
  };
  auto small = make_jobs(100);  // 10 runs a second
  auto plan = apply_run_budget(small, RunBudget{20});
  EXPECT_NEAR(plan.demand, 10.0, 1e-9) << "the sweep is one run, not counted";
  EXPECT_EQ(small[100].interval, 30s);
  EXPECT_EQ(plan.interval_seconds.at("scrub"), 30.0);
  auto big = make_jobs(600);  // 60 runs a second: x3
  plan = apply_run_budget(big, RunBudget{20});
  EXPECT_NEAR(plan.demand, 60.0, 1e-9);
  EXPECT_EQ(plan.stretch, 3.0);
  EXPECT_EQ(big[600].interval, 90s);
  EXPECT_EQ(plan.interval_seconds.at("scrub"), 90.0);
  EXPECT_EQ(big[601].interval, 5s);
  EXPECT_FALSE(plan.interval_seconds.count("kernel_log"));
}
