#pragma once
// A small worker pool. Some I/O cannot be cancelled (statfs on a dead mount, fsync on a failing
// disk): the scheduler tells the pool how many workers are stuck, and the pool may grow by that many
// so a hung probe never delays the others (design note 6).
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fsaudit {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void submit(std::function<void()> task) = 0;
  virtual void set_stuck(int n) { (void)n; }
};

class ThreadPool final : public Executor {
 public:
  explicit ThreadPool(int workers, int max_extra = 8);
  ~ThreadPool() override;  // waits for running tasks (callers cancel them first)
  void submit(std::function<void()> task) override;
  void set_stuck(int n) override;
  int threads() const;

 private:
  void worker();
  void maybe_grow_locked();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  int base_, max_extra_, stuck_ = 0, idle_ = 0;
  bool stopping_ = false;
};

// Runs tasks inline on the caller's thread (unit tests).
class InlineExecutor final : public Executor {
 public:
  void submit(std::function<void()> task) override { task(); }
};

}  // namespace fsaudit
