#include "daemon/scheduler/thread_pool.hpp"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace fsaudit {

// glibc gives each thread that meets a locked arena an arena of its own (up to 8 per core), and
// memory freed in one stays there: with probes landing on whichever worker is free, every worker's
// arena would keep its own high-water mark of batches and exposition text. This daemon allocates
// little and rarely, so one arena costs no measurable contention. A fixed mmap threshold keeps the
// large, short-lived blocks (a scrape's exposition, a tool's output) out of the heap: glibc would
// otherwise raise the threshold after the first such free and let the next ones fragment the heap.
void tune_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  });
}

namespace {

// What a burst of work freed (a scrape's exposition, the first cycle's batches) stays in the heap
// as free chunks between live ones; returning whole free pages now and then keeps RSS near what is
// live (about half the heap at 1,000 filesystems). A minute apart: a trim walks the heap (7-17 ms for a
// fragmented 25 MB heap on this machine, `malloc_trim(0)` timed in a standalone program).
void maybe_trim() {
  static std::atomic<std::int64_t> last{0};
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  auto seen = last.load(std::memory_order_relaxed);
  if (now - seen < 60 || !last.compare_exchange_strong(seen, now)) return;
  malloc_trim(0);
}
}  // namespace

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
    maybe_trim();
    l.lock();
  }
}

}  // namespace fsaudit
