#include "daemon/scheduler/thread_pool.hpp"

#include <algorithm>
#include <mutex>

#include "daemon/core/allocator.hpp"

namespace fsaudit {

ThreadPool::ThreadPool(int workers, int max_extra) : base_(std::max(1, workers)), max_extra_(max_extra) {
  tune_allocator();  // before the workers exist, so none of them starts with an arena of its own
  std::lock_guard l(mu_);
  for (int i = 0; i < base_; ++i) threads_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard l(mu_);
    queue_.push_back(std::move(task));
    maybe_grow_locked();
  }
  cv_.notify_one();
}

void ThreadPool::set_stuck(int n) {
  std::lock_guard l(mu_);
  stuck_ = n;
  maybe_grow_locked();
}

int ThreadPool::threads() const {
  std::lock_guard l(mu_);
  return static_cast<int>(threads_.size());
}

void ThreadPool::maybe_grow_locked() {
  // Threads never shrink: a stuck call may hold its thread forever, and the cap bounds the growth.
  int allowed = base_ + std::min(stuck_, max_extra_);
  if (!queue_.empty() && idle_ == 0 && static_cast<int>(threads_.size()) < allowed && !stopping_)
    threads_.emplace_back([this] { worker(); });
}

void ThreadPool::worker() {
  std::unique_lock l(mu_);
  while (true) {
    ++idle_;
    cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (stopping_) return;
    auto task = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    task();
    release_free_memory();
    l.lock();
  }
}

}  // namespace fsaudit
