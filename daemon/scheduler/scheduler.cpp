#include "daemon/scheduler/scheduler.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "daemon/core/units.hpp"

namespace fsaudit {

using std::chrono::milliseconds;

Scheduler::Scheduler(const Clock& clock, Executor& executor, ContextFactory make_context, Sink sink,
                     std::uint64_t seed)
    : clock_(clock), executor_(executor), make_context_(std::move(make_context)), sink_(std::move(sink)),
      rng_(seed) {}

Scheduler::~Scheduler() { cancel_all(); }

milliseconds Scheduler::jitter_for(const JobSpec& spec) {
  if (spec.jitter.count() <= 0) return milliseconds(0);
  std::uniform_int_distribution<long long> d(0, spec.jitter.count());
  return milliseconds(d(rng_));
}

bool Scheduler::batched(const Job& j) const {
  return j.spec->probe->batched() && (!j.spec->window || j.spec->window->always);
}

SteadyTime Scheduler::window_due(const Job& j, SteadyTime candidate) const {
  if (!j.spec->window || j.spec->window->always) return candidate;
  // Translate the steady candidate to wall time, find the window, translate back.
  auto now_s = clock_.now();
  auto now_w = clock_.wall();
  auto cand_w = now_w + std::chrono::duration_cast<std::chrono::system_clock::duration>(candidate - now_s);
  auto start_w = j.spec->window->next_start(cand_w);
  return now_s + std::chrono::duration_cast<std::chrono::steady_clock::duration>(start_w - now_w);
}

// Batched probes run every target on one grid per probe (anchor + k * interval), so their due runs
// coincide and go out as one task. The anchor carries the probe's jitter, drawn once.
SteadyTime Scheduler::grid_due(const Job& j, SteadyTime not_before) {
  auto [it, fresh] = grid_anchor_.try_emplace(j.spec->probe->name(), SteadyTime{});
  if (fresh) it->second = clock_.now() + jitter_for(*j.spec);
  auto anchor = it->second;
  if (not_before <= anchor) return anchor;
  auto step = std::max<std::chrono::steady_clock::duration>(j.spec->interval, milliseconds(1));
  auto k = (not_before - anchor + step - std::chrono::steady_clock::duration(1)) / step;
  return anchor + k * step;
}

void Scheduler::set_jobs(std::vector<JobSpec> specs) {
  std::vector<std::pair<Sink, SpecPtr>> orphans;  // run_now callers of removed jobs, answered after the lock
  std::unique_lock l(mu_);
  Jobs next;
  next.reserve(specs.size());
  auto now = clock_.now();
  // One job per key: a key listed twice keeps the last spec.
  auto put = [&](std::size_t h, const std::string& key, std::shared_ptr<Job> j) {
    if (auto n = find_job(next, h, key); n != next.end()) n->second = std::move(j);
    else next.emplace(h, std::move(j));
  };
  for (auto& s : specs) {
    auto key = s.key();
    const auto h = std::hash<std::string>{}(key);
    auto it = find_job(jobs_, h, key);
    if (it != jobs_.end()) {
      auto j = it->second;
      bool timing_changed = j->spec->interval != s.interval;
      j->spec = std::make_shared<const JobSpec>(std::move(s));
      if (timing_changed && !j->running)
        j->next_due = batched(*j) ? grid_due(*j, now) : window_due(*j, now + jitter_for(*j->spec));
      put(h, key, j);
      jobs_.erase(it);
    } else {
      auto j = std::make_shared<Job>();
      j->spec = std::make_shared<const JobSpec>(std::move(s));
      // Staggered first start: spread within the jitter so a fleet (and a host) doesn't probe in lockstep.
      j->next_due = batched(*j) ? grid_due(*j, now) : window_due(*j, now + jitter_for(*j->spec));
      put(h, key, std::move(j));
    }
  }
  // Jobs that disappeared: cancel in-flight runs; their results are dropped when they return.
  for (auto& [key, j] : jobs_) {
    j->removed = true;
    j->request_stop();
    if (j->waiting)
      for (auto* w : {&j->waiting->next, &j->waiting->now})
        for (auto& d : std::exchange(*w, {})) orphans.emplace_back(std::move(d), j->spec);
  }
  jobs_ = std::move(next);
  stuck_count_ = 0;
  due_ = {};
  in_flight_jobs_.clear();
  for (auto& [k, j] : jobs_) {
    stuck_count_ += j->stuck ? 1 : 0;
    if (j->running) in_flight_jobs_.insert(j);
    else queue_locked(j);
  }
  update_stuck_locked();
  l.unlock();
  for (auto& [done, spec] : orphans) {
    JobOutcome o;
    o.spec = spec;
    o.result = ProbeResult::failed("no longer scheduled: the configuration was reloaded before it ran");
    done(o);
  }
}

Scheduler::Jobs::iterator Scheduler::find_job(Jobs& jobs, std::size_t hash, const std::string& key) {
  auto [it, end] = jobs.equal_range(hash);
  for (; it != end; ++it)
    if (it->second->spec->key() == key) return it;
  return jobs.end();
}

bool Scheduler::run_now(const std::string& key, Sink done) {
  std::lock_guard l(mu_);
  auto it = find_job(jobs_, std::hash<std::string>{}(key), key);
  if (it == jobs_.end()) return false;
  auto& j = *it->second;
  j.waiters().next.push_back(std::move(done));
  if (!j.running) {
    j.next_due = clock_.now();
    queue_locked(it->second);
  }
  return true;
}

SteadyTime Scheduler::tick() {
  auto now = clock_.now();
  std::vector<std::pair<std::shared_ptr<Job>, SpecPtr>> single;
  std::map<const Probe*, std::shared_ptr<BatchQueue>> batches;
  std::vector<std::shared_ptr<BatchQueue>> resume;  // batches whose draining task is stuck
  std::vector<JobOutcome> timeouts;
  std::vector<std::vector<Sink>> timeout_waiters;  // run_now callers of each timed-out run, by index
  SteadyTime next = now + std::chrono::seconds(60);
  {
    std::lock_guard l(mu_);
    for (auto it = in_flight_jobs_.begin(); it != in_flight_jobs_.end();) {
      const auto& j = *it;
      if (!j->running || j->removed) {
        it = in_flight_jobs_.erase(it);
        continue;
      }
      if (j->started && !j->stuck && now >= j->run->deadline) {
        // The run is over as far as accounting goes: one run, one failure, one timeout. When it
        // returns later it only clears `stuck`.
        j->stuck = true;
        j->republish = true;  // the timed-out outcome drops the job's metrics
        ++stuck_count_;
        ++j->timeouts;
        ++j->runs;
        ++j->failures;
        j->request_stop();
        auto& t = totals_[j->spec->probe->name()];
        ++t.runs;
        ++t.failures;
        ++t.timeouts;
        double took = std::chrono::duration<double>(now - j->run->started_at).count();
        t.seconds += took;
        t.last_end = clock_.wall();
        JobOutcome o{j->spec,
                     ProbeResult::failed("timed out after " + format_duration(j->spec->timeout) +
                                         " (still running; not started again until it returns)"),
                     took, true, false, t.last_end, ++seq_, true, t,
                     std::shared_ptr<const std::atomic<std::uint64_t>>(j, &j->seq)};
        j->seq.store(seq_, std::memory_order_release);
        timeouts.push_back(std::move(o));
        timeout_waiters.push_back(j->take_waiting_now());
        if (const auto& b = j->run->batch) {
          std::lock_guard bl(b->mu);
          if (!b->items.empty()) resume.push_back(b);
        }
      }
      if (j->started && !j->stuck) next = std::min(next, j->run->deadline);
      ++it;
    }
    for (drop_stale_locked(); !due_.empty() && due_.top().due <= now; drop_stale_locked()) {
      auto j = due_.top().job;
      due_.pop();
      ++j->due_gen;  // dispatched: no entry stands for it until it finishes
      j->running = true;
      ++runs_in_flight_;
      j->started = false;
      j->run = std::make_unique<Job::Run>();
      if (j->waiting) j->waiting->now = std::exchange(j->waiting->next, {});
      in_flight_jobs_.insert(j);
      if (batched(*j)) {
        auto& q = batches[j->spec->probe.get()];
        if (!q) q = std::make_shared<BatchQueue>();
        j->run->batch = q;
        q->items.emplace_back(j, j->spec);
      } else {
        single.emplace_back(j, j->spec);
      }
      next = std::min(next, now + j->spec->timeout);
    }
    if (!due_.empty()) next = std::min(next, due_.top().due);
    if (!timeouts.empty()) update_stuck_locked();
    planned_wake_ = next;
    wake_early_.store(false, std::memory_order_release);
  }
  for (std::size_t i = 0; i < timeouts.size(); ++i) {
    sink_(timeouts[i]);
    for (auto& d : timeout_waiters[i]) d(timeouts[i]);
  }
  for (auto& q : resume) executor_.submit([this, q] { drain(q, false); });
  // Captured by initialisers: clang 14 (the ASan build's compiler) cannot capture a structured binding.
  for (auto& [j, spec] : single)
    executor_.submit([this, job = j, spec = std::move(spec)] { run_one(job, spec); });
  for (auto& [probe, q] : batches) executor_.submit([this, batch = q] { drain(batch, true); });
  return next;
}

void Scheduler::drain(const std::shared_ptr<BatchQueue>& q, bool prepare) {
  if (prepare) prepare_batch(q);
  while (true) {
    std::pair<std::shared_ptr<Job>, SpecPtr> item;
    {
      std::lock_guard l(q->mu);
      if (q->items.empty()) return;
      item = std::move(q->items.front());
      q->items.pop_front();
    }
    run_one(item.first, item.second);
  }
}

// Lets the probe fetch what the queued runs need in one go (Probe::prepare_batch). Its context stops
// with the first queued run (cancel_all, a reload that removes it) and has that run's timeout.
void Scheduler::prepare_batch(const std::shared_ptr<BatchQueue>& q) {
  std::vector<SpecPtr> specs;
  std::shared_ptr<Job> first;
  {
    std::lock_guard l(q->mu);
    if (q->items.empty()) return;
    first = q->items.front().first;
    specs.reserve(q->items.size());
    for (const auto& item : q->items) specs.push_back(item.second);
  }
  std::shared_ptr<std::stop_source> stop;
  {
    std::lock_guard l(mu_);
    if (first->run) stop = first->run->stop;
  }
  if (!stop) return;
  std::vector<const Target*> targets;
  targets.reserve(specs.size());
  for (const auto& s : specs) targets.push_back(s->target.get());
  try {
    ProbeContext ctx = make_context_(stop->get_token(), clock_.now() + specs.front()->timeout);
    specs.front()->probe->prepare_batch(targets, ctx);
  } catch (...) {
    // Only a head start: every run still does its own work.
  }
}

// The run holds its spec (and so a reference on its probe): a reload may replace the job's.
void Scheduler::run_one(const std::shared_ptr<Job>& j, const SpecPtr& spec) {
  std::shared_ptr<std::stop_source> stop;
  SteadyTime deadline;
  bool requested = false, republish = true;
  {
    std::lock_guard l(mu_);
    if (j->removed) {  // dropped by a reload while it waited in the queue
      j->running = false;
      j->run.reset();
      --runs_in_flight_;
      return;
    }
    j->started = true;
    j->run->started_at = clock_.now();
    j->run->deadline = j->run->started_at + spec->timeout;
    stop = j->run->stop;
    deadline = j->run->deadline;
    requested = j->waiting && !j->waiting->now.empty();
    republish = j->republish;
    j->republish = false;
  }
  ProbeResult r;
  try {
    ProbeContext ctx = make_context_(stop->get_token(), deadline);
    ctx.requested = requested;
    ctx.republish = republish;
    r = spec->probe->run(*spec->target, ctx);
    if (r.unchanged && republish)
      r = ProbeResult::failed("internal error: the probe kept its last metrics where it had to publish them afresh");
  } catch (const std::exception& e) {
    r = ProbeResult::failed(std::string("internal error: ") + e.what());
  } catch (...) {
    r = ProbeResult::failed("internal error: unknown exception");
  }
  finished(j, spec, std::move(r), clock_.now(), clock_.wall());
}

void Scheduler::finished(const std::shared_ptr<Job>& j, const SpecPtr& spec, ProbeResult r, SteadyTime end,
                         WallTime wall_end) {
  JobOutcome o;
  bool removed;
  std::vector<Sink> waiters;
  {
    std::lock_guard l(mu_);
    bool was_stuck = j->stuck;
    removed = j->removed;
    if (was_stuck && !removed) --stuck_count_;
    if (was_stuck || r.outcome == Outcome::failed) j->republish = true;  // a late return drops the metrics too
    const SteadyTime started_at = j->run->started_at;
    double took = std::chrono::duration<double>(end - started_at).count();
    j->running = false;
    --runs_in_flight_;
    j->started = false;
    j->stuck = false;
    j->run.reset();
    auto& t = totals_[spec->probe->name()];
    if (!was_stuck) {
      ++j->runs;
      ++t.runs;
      if (r.outcome == Outcome::failed) {
        ++j->failures;
        ++t.failures;
      }
      t.seconds += took;
      t.last_end = wall_end;
    }
    // Next run: one interval after this one was due (no drift), but never before it finished.
    if (batched(*j)) {
      j->next_due = grid_due(*j, std::max(j->next_due + milliseconds(1), end));
    } else {
      auto base = std::max(j->next_due + j->spec->interval, end);
      if (was_stuck) base = end + j->spec->interval;
      j->next_due = window_due(*j, base + jitter_for(*j->spec));
    }
    if (j->waits_next()) j->next_due = end;  // run_now asked while this run was in flight
    if (!removed) {
      in_flight_jobs_.erase(j);
      queue_locked(j);
    }
    if (!removed && j->next_due < planned_wake_) wake_early_.store(true, std::memory_order_release);
    ++delivering_;
    waiters = j->take_waiting_now();
    if (j->waiting && j->waiting->next.empty()) j->waiting.reset();
    update_stuck_locked();
    if (was_stuck) {
      // Late return of a timed-out run: its result is stale; the timeout stays the job's last result.
      r = ProbeResult::failed("timed out after " + format_duration(spec->timeout) + " (returned after " +
                              format_duration(std::chrono::duration_cast<milliseconds>(end - started_at)) + ")");
    }
    o = JobOutcome{spec, std::move(r), took, false, was_stuck, wall_end, ++seq_, false, t,
                   std::shared_ptr<const std::atomic<std::uint64_t>>(j, &j->seq)};
    j->seq.store(seq_, std::memory_order_release);
  }
  if (!removed) {
    sink_(o);
    for (auto& d : waiters) d(o);
  }
  // The first cycle is done, and shutdown may proceed, only once the outcome has been taken.
  std::lock_guard l(mu_);
  j->ever_finished = true;
  --delivering_;
}

void Scheduler::queue_locked(const std::shared_ptr<Job>& j) {
  due_.push(DueEntry{j->next_due, ++j->due_gen, j});
}

// Entries whose job was dispatched, requeued or removed since they were pushed.
void Scheduler::drop_stale_locked() {
  while (!due_.empty()) {
    const auto& e = due_.top();
    if (e.gen == e.job->due_gen && !e.job->removed && !e.job->running) return;
    due_.pop();
  }
}

// Called on every state change; it must not walk every job (that made each finished run cost
// O(jobs), so a cycle O(jobs^2)): only set_jobs() recounts.
void Scheduler::update_stuck_locked() {
  if (stuck_count_ == reported_stuck_) return;
  reported_stuck_ = stuck_count_;
  executor_.set_stuck(stuck_count_);
}

void Scheduler::cancel_all() {
  std::lock_guard l(mu_);
  for (auto& [k, j] : jobs_) j->request_stop();
}

// Counted, not looked up in jobs_: a run whose job a reload removed is still in flight until it returns.
std::size_t Scheduler::in_flight() const {
  std::lock_guard l(mu_);
  return runs_in_flight_ + static_cast<std::size_t>(delivering_);
}

namespace {
template <class Job>
bool holds_ready_back(const Job& j) {
  if (j.spec->window && !j.spec->window->always) return false;
  return !j.ever_finished && !j.stuck;
}
}  // namespace

bool Scheduler::first_cycle_done() const {
  std::lock_guard l(mu_);
  return std::none_of(jobs_.begin(), jobs_.end(), [](const auto& kv) { return holds_ready_back(*kv.second); });
}

std::vector<std::string> Scheduler::first_runs_pending() const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (auto& [h, j] : jobs_)
    if (holds_ready_back(*j)) out.push_back(j->spec->key());
  std::sort(out.begin(), out.end());
  return out;
}

int Scheduler::stuck_jobs() const {
  std::lock_guard l(mu_);
  return stuck_count_;
}

std::vector<JobStatus> Scheduler::status() const {
  std::lock_guard l(mu_);
  std::vector<JobStatus> out;
  out.reserve(jobs_.size());
  for (auto& [h, j] : jobs_)
    out.push_back({j->spec->key(), j->running, j->stuck, j->ever_finished, j->next_due, j->runs, j->timeouts, j->failures});
  std::sort(out.begin(), out.end(), [](const JobStatus& a, const JobStatus& b) { return a.key < b.key; });
  return out;
}

}  // namespace fsaudit
