#include "daemon/core/spare_threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using fsaudit::SpareThreads;

namespace {
// Waits (up to 10 s) until pred() holds.
template <class P>
bool eventually(P pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}
}  // namespace

TEST(SpareThreads, TasksOneAfterAnotherReuseTheirThread) {
  SpareThreads t(10s);
  std::atomic<int> ran{0};
  std::set<std::thread::id> ids;
  std::mutex mu;
  for (int i = 0; i < 50; ++i) {
    std::promise<void> done;
    auto f = done.get_future();
    ASSERT_EQ(t.run(
                  [&] {
                    {
                      std::lock_guard l(mu);
                      ids.insert(std::this_thread::get_id());
                    }
                    ++ran;
                  },
                  [&] { done.set_value(); }),
              "");
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  }
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(t.tasks(), 50u);
  EXPECT_EQ(t.started(), 1u);
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_FALSE(ids.count(std::this_thread::get_id()));
}

// A task that never returns (a hung fsync) holds its thread only: the next task gets a new one.
TEST(SpareThreads, AHungTaskHoldsOnlyItsOwnThread) {
  SpareThreads t(10s);
  std::promise<void> release;
  auto hung = release.get_future().share();
  std::atomic<bool> hung_started{false};
  ASSERT_EQ(t.run([hung, &hung_started] {
              hung_started = true;
              hung.wait();
            }),
            "");
  ASSERT_TRUE(eventually([&] { return hung_started.load(); }));
  for (int i = 0; i < 5; ++i) {
    std::promise<void> done;
    auto f = done.get_future();
    ASSERT_EQ(t.run([] {}, [&] { done.set_value(); }), "");
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "task " << i << " waited behind the hung one";
  }
  EXPECT_EQ(t.started(), 2u);  // the hung one, and one for five tasks one after another
  EXPECT_EQ(t.threads(), 2u);
  release.set_value();
}

// Tasks handed over at once each get a thread of their own and all run.
TEST(SpareThreads, ABurstRunsInParallelAndIdleThreadsEnd) {
  SpareThreads t(200ms);
  constexpr int kTasks = 6;
  std::atomic<int> waiting{0};
  std::promise<void> go;
  auto gate = go.get_future().share();
  for (int i = 0; i < kTasks; ++i)
    ASSERT_EQ(t.run([&, gate] {
                ++waiting;
                gate.wait();
              }),
              "");
  ASSERT_TRUE(eventually([&] { return waiting.load() == kTasks; })) << "the tasks did not all run at once";
  EXPECT_EQ(t.started(), static_cast<std::size_t>(kTasks));
  go.set_value();
  EXPECT_TRUE(eventually([&] { return t.threads() == 0; })) << "idle threads did not end after idle_for";
}

// Destroying the pool while a task runs: the task finishes, its thread ends, nothing is freed under it.
TEST(SpareThreads, DestroyedWhileATaskRuns) {
  std::promise<void> release;
  auto gate = release.get_future().share();
  std::atomic<bool> finished{false};
  {
    SpareThreads t(10s);
    ASSERT_EQ(t.run([gate, &finished] {
                gate.wait();
                finished = true;
              }),
              "");
  }
  release.set_value();
  EXPECT_TRUE(eventually([&] { return finished.load(); }));
}
