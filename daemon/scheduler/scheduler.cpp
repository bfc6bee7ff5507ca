#include "daemon/scheduler/scheduler.hpp"

#include <algorithm>
#include <exception>

#include "daemon/core/units.hpp"

namespace fsaudit {

using std::chrono::milliseconds;

Scheduler::Scheduler(const Clock& clock, Executor& executor, ContextFactory make_context, Sink sink,
                     std::uint64_t seed)
    : clock_(clock), executor_(executor), make_context_(std::move(make_context)), sink_(std::move(sink)),
      rng_(seed) {}

Scheduler::~Scheduler() { cancel_all(); }

milliseconds Scheduler::jitter_for(const Job& j) {
  if (j.spec.jitter.count() <= 0) return milliseconds(0);
  std::uniform_int_distribution<long long> d(0, j.spec.jitter.count());
  return milliseconds(d(rng_));
}

SteadyTime Scheduler::window_due(const Job& j, SteadyTime candidate) const {
  if (!j.spec.window || j.spec.window->always) return candidate;
  // Translate the steady candidate to wall time, find the window, translate back.
  auto now_s = clock_.now();
  auto now_w = clock_.wall();
  auto cand_w = now_w + std::chrono::duration_cast<std::chrono::system_clock::duration>(candidate - now_s);
  auto start_w = j.spec.window->next_start(cand_w);
  return now_s + std::chrono::duration_cast<std::chrono::steady_clock::duration>(start_w - now_w);
}

void Scheduler::set_jobs(std::vector<JobSpec> specs) {
  std::lock_guard l(mu_);
  std::map<std::string, std::shared_ptr<Job>> next;
  auto now = clock_.now();
  for (auto& s : specs) {
    auto key = s.key();
    auto it = jobs_.find(key);
    if (it != jobs_.end()) {
      auto j = it->second;
      bool timing_changed = j->spec.interval != s.interval;
      j->spec = std::move(s);
      if (timing_changed && !j->running) j->next_due = window_due(*j, now + jitter_for(*j));
      next[key] = j;
      jobs_.erase(it);
    } else {
      auto j = std::make_shared<Job>();
      j->spec = std::move(s);
      // Staggered first start: spread within the jitter so a fleet (and a host) doesn't probe in lockstep.
      j->next_due = window_due(*j, now + jitter_for(*j));
      next[key] = j;
    }
  }
  // Jobs that disappeared: cancel in-flight runs; their results are dropped when they return.
  for (auto& [key, j] : jobs_) {
    j->removed = true;
    if (j->stop) j->stop->request_stop();
  }
  jobs_ = std::move(next);
  update_stuck_locked();
}

SteadyTime Scheduler::tick() {
  auto now = clock_.now();
  std::vector<std::pair<std::shared_ptr<Job>, JobSpec>> due;
  struct Stuck {
    JobSpec spec;
    SteadyTime started;
  };
  std::vector<Stuck> newly_stuck;
  SteadyTime next = now + std::chrono::seconds(60);
  {
    std::lock_guard l(mu_);
    for (auto& [key, j] : jobs_) {
      if (j->running) {
        if (!j->stuck && now >= j->deadline) {
          j->stuck = true;
          ++j->timeouts;
          if (j->stop) j->stop->request_stop();
          newly_stuck.push_back({j->spec, j->started});
        }
        if (!j->stuck) next = std::min(next, j->deadline);
        continue;
      }
      if (now >= j->next_due) {
        j->running = true;
        j->started = now;
        j->deadline = now + j->spec.timeout;
        j->stop = std::make_shared<std::stop_source>();
        ++j->runs;
        due.emplace_back(j, j->spec);
        next = std::min(next, j->deadline);
      } else {
        next = std::min(next, j->next_due);
      }
    }
    if (!newly_stuck.empty()) update_stuck_locked();
  }
  for (auto& st : newly_stuck) {
    JobOutcome o{st.spec,
                 ProbeResult::failed("timed out after " + format_duration(st.spec.timeout) +
                                     " (still running; not started again until it returns)"),
                 std::chrono::duration<double>(now - st.started).count(), true, false, clock_.wall()};
    sink_(o);
  }
  for (auto& [j, spec] : due) dispatch(j, std::move(spec), now);
  return next;
}

void Scheduler::dispatch(const std::shared_ptr<Job>& j, JobSpec spec, SteadyTime now) {
  std::shared_ptr<std::stop_source> stop;
  {
    std::lock_guard l(mu_);
    stop = j->stop;
  }
  auto deadline = now + spec.timeout;
  // The run owns a copy of its spec (and so a reference on its probe): a reload may replace both.
  executor_.submit([this, j, stop, deadline, spec = std::move(spec)] {
    ProbeResult r;
    try {
      ProbeContext ctx = make_context_(stop->get_token(), deadline);
      r = spec.probe->run(spec.target, ctx);
    } catch (const std::exception& e) {
      r = ProbeResult::failed(std::string("internal error: ") + e.what());
    } catch (...) {
      r = ProbeResult::failed("internal error: unknown exception");
    }
    finished(j, spec, std::move(r), clock_.now(), clock_.wall());
  });
}

void Scheduler::finished(const std::shared_ptr<Job>& j, const JobSpec& spec, ProbeResult r, SteadyTime end,
                         WallTime wall_end) {
  bool was_stuck, removed;
  SteadyTime started;
  {
    std::lock_guard l(mu_);
    was_stuck = j->stuck;
    removed = j->removed;
    started = j->started;
    j->running = false;
    j->stuck = false;
    j->ever_finished = true;
    j->stop.reset();
    if (r.outcome == Outcome::failed) ++j->failures;
    // Next run: one interval after this one was due (no drift), but never before it finished.
    auto base = std::max(j->next_due + j->spec.interval, end);
    if (was_stuck) base = end + j->spec.interval;
    j->next_due = window_due(*j, base + jitter_for(*j));
    update_stuck_locked();
  }
  if (removed) return;
  JobOutcome o{spec, std::move(r), std::chrono::duration<double>(end - started).count(), false, was_stuck, wall_end};
  sink_(o);
}

void Scheduler::update_stuck_locked() {
  int n = 0;
  for (auto& [k, j] : jobs_) n += j->stuck ? 1 : 0;
  executor_.set_stuck(n);
}

void Scheduler::cancel_all() {
  std::lock_guard l(mu_);
  for (auto& [k, j] : jobs_)
    if (j->stop) j->stop->request_stop();
}

std::size_t Scheduler::in_flight() const {
  std::lock_guard l(mu_);
  std::size_t n = 0;
  for (auto& [k, j] : jobs_) n += j->running ? 1 : 0;
  return n;
}

bool Scheduler::first_cycle_done() const {
  std::lock_guard l(mu_);
  for (auto& [k, j] : jobs_) {
    if (j->spec.window && !j->spec.window->always) continue;
    if (!j->ever_finished && !j->stuck) return false;
  }
  return true;
}

std::vector<JobStatus> Scheduler::status() const {
  std::lock_guard l(mu_);
  std::vector<JobStatus> out;
  for (auto& [k, j] : jobs_)
    out.push_back({k, j->running, j->stuck, j->ever_finished, j->next_due, j->runs, j->timeouts, j->failures});
  return out;
}

}  // namespace fsaudit
