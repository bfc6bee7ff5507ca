#pragma once
// Threads for blocking calls that may never return (a sample waiting on a hung filesystem's
// fsync). A task runs on a thread that is idle now, or on a new one: a task that hangs holds only
// its own thread, and the next task gets another. A thread idle for `idle_for` ends, so a burst
// leaves nothing behind. The point is the steady state: a sampler that dispatched ten samples a
// second started ten threads a second (an 8 MiB stack mapped, faulted in and unmapped each time),
// which cost the daemon more than handing the sample to its child process.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace fsaudit {

class SpareThreads {
 public:
  explicit SpareThreads(std::chrono::milliseconds idle_for = std::chrono::seconds(60));
  // Idle threads end on their own; busy ones finish their task first. Safe while tasks still run.
  ~SpareThreads();
  SpareThreads(const SpareThreads&) = delete;
  SpareThreads& operator=(const SpareThreads&) = delete;

  // Runs `task` on an idle thread or a new one, then `then` on the same thread once it counts as
  // free again: a caller that waits for `then` before its next run() gets the same thread back
  // (one that waits for a signal from inside `task` may find it still busy and start another).
  // Empty on success; otherwise why no thread could be started (neither runs, ever).
  std::string run(std::function<void()> task, std::function<void()> then = {});

  std::size_t threads() const;  // alive now (idle or busy)
  std::size_t started() const;  // ever started
  std::size_t tasks() const;    // ever accepted by run()

 private:
  struct State;
  static void serve(const std::shared_ptr<State>& st);  // a thread's life
  std::shared_ptr<State> st_;  // shared with the threads, which may outlive this object
};

}  // namespace fsaudit
