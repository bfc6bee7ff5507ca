#include "daemon/core/spare_threads.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

namespace fsaudit {

struct SpareThreads::State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::function<void()>, std::function<void()>>> tasks;  // task, then
  std::chrono::milliseconds idle_for;
  // free: alive and not inside a task (waiting, starting up, or just back from one). Each of them
  // looks at the queue before it waits, so a task that finds a free thread never needs a new one.
  std::size_t free = 0, alive = 0, started = 0, accepted = 0;
  bool closing = false;
};

void SpareThreads::serve(const std::shared_ptr<State>& st) {
  std::unique_lock l(st->mu);
  for (;;) {
    if (!st->tasks.empty()) {
      auto [task, then] = std::move(st->tasks.front());
      st->tasks.pop_front();
      --st->free;
      l.unlock();
      task();
      task = nullptr;  // the task's captures go now, not when the next one comes
      l.lock();
      ++st->free;
      if (then) {
        l.unlock();
        then();
        then = nullptr;
        l.lock();
      }
      continue;
    }
    if (st->closing) break;
    if (!st->cv.wait_for(l, st->idle_for, [&] { return !st->tasks.empty() || st->closing; })) break;
  }
  --st->free;
  --st->alive;
}

SpareThreads::SpareThreads(std::chrono::milliseconds idle_for) : st_(std::make_shared<State>()) {
  st_->idle_for = idle_for;
}

SpareThreads::~SpareThreads() {
  std::lock_guard l(st_->mu);
  st_->closing = true;
  st_->cv.notify_all();
}

std::string SpareThreads::run(std::function<void()> task, std::function<void()> then) {
  std::lock_guard l(st_->mu);
  st_->tasks.emplace_back(std::move(task), std::move(then));
  // Every queued task has a free thread to take it: wake one (a thread that is not waiting looks at
  // the queue before it does). Otherwise this task needs a new thread.
  if (st_->tasks.size() <= st_->free) {
    st_->cv.notify_one();
    ++st_->accepted;
    return {};
  }
  try {
    std::thread([st = st_] { serve(st); }).detach();
  } catch (const std::system_error& e) {
    st_->tasks.pop_back();
    return std::string("cannot start a thread: ") + e.what();
  }
  ++st_->free;
  ++st_->alive;
  ++st_->started;
  ++st_->accepted;
  return {};
}

std::size_t SpareThreads::threads() const {
  std::lock_guard l(st_->mu);
  return st_->alive;
}

std::size_t SpareThreads::tasks() const {
  std::lock_guard l(st_->mu);
  return st_->accepted;
}

std::size_t SpareThreads::started() const {
  std::lock_guard l(st_->mu);
  return st_->started;
}

}  // namespace fsaudit
