#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "daemon/metrics/record_pool.hpp"

using fsaudit::metrics::RecordPool;

namespace {

struct Slot {
  char* p;
  std::size_t n;
  unsigned char fill;
};

void check(const Slot& s) {
  for (std::size_t i = 0; i < s.n; ++i) ASSERT_EQ(static_cast<unsigned char>(s.p[i]), s.fill) << "byte " << i << " of " << s.n;
}

}  // namespace

// A key's record replaced again and again, at about the same size, takes the slot its last one gave
// back: a day of republishing 2,000 keys maps no slab beyond the first round's.
TEST(RecordPool, ReplacedRecordsReuseTheirSlotsAndTheSlabsStopGrowing) {
  if (!RecordPool::enabled()) GTEST_SKIP() << "the pool is off under ASan (each record its own allocation)";
  std::mt19937 rng(5);
  std::vector<Slot> live;
  for (int i = 0; i < 2000; ++i) {
    std::size_t n = 150 + rng() % 500;
    auto* p = static_cast<char*>(RecordPool::allocate(n));
    std::memset(p, i & 0xff, n);
    live.push_back({p, n, static_cast<unsigned char>(i & 0xff)});
  }
  const auto after_first = RecordPool::stats();
  for (int round = 0; round < 50; ++round) {
    for (auto& s : live) {
      check(s);
      // The same text give or take a few digits: the same class nearly always.
      std::size_t n = s.n + rng() % 3;
      n = n > 8 ? n - 2 : n;
      RecordPool::deallocate(s.p, s.n);
      s.p = static_cast<char*>(RecordPool::allocate(n));
      s.n = n;
      s.fill = static_cast<unsigned char>(rng());
      std::memset(s.p, s.fill, n);
    }
  }
  for (const auto& s : live) check(s);
  EXPECT_LE(RecordPool::stats().slab_bytes, after_first.slab_bytes + 8 * 64 * 1024)
      << "slabs grew with republishing instead of reusing the slots";
  const auto used = RecordPool::stats().used_bytes;
  for (const auto& s : live) RecordPool::deallocate(s.p, s.n);
  EXPECT_LT(RecordPool::stats().used_bytes, used);
  // Freed, then asked for again at the same size: the same slot.
  void* a = RecordPool::allocate(300);
  RecordPool::deallocate(a, 300);
  EXPECT_EQ(RecordPool::allocate(300), a);
  RecordPool::deallocate(a, 300);
}

// Records are made on the workers and let go of wherever their last exposition ends: four threads
// allocating and freeing at once never hand out a slot twice (each checks its bytes), larger sizes included.
TEST(RecordPool, ThreadsAllocatingAndFreeingAtOnceKeepTheirBytes) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<Slot> mine;
      for (int i = 0; i < 20000; ++i) {
        if (!mine.empty() && rng() % 2) {
          auto k = rng() % mine.size();
          check(mine[k]);
          RecordPool::deallocate(mine[k].p, mine[k].n);
          mine[k] = mine.back();
          mine.pop_back();
        } else {
          std::size_t n = 1 + rng() % (rng() % 8 == 0 ? 3 * RecordPool::kLargest : 1024);
          auto* p = static_cast<char*>(RecordPool::allocate(n));
          auto fill = static_cast<unsigned char>(rng());
          std::memset(p, fill, n);
          mine.push_back({p, n, fill});
        }
      }
      for (const auto& s : mine) {
        check(s);
        RecordPool::deallocate(s.p, s.n);
      }
    });
  for (auto& th : threads) th.join();
}
