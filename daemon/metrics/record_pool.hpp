#pragma once
// Memory for the store's records, apart from the daemon's heap (issue 33). A record lives until its key
// publishes again, then a new one of nearly the same size takes its place: 40,000 of them at 10,000
// filesystems, replaced one by one all day, among the short-lived allocations of every probe run. In
// glibc's heap each replacement left a hole that a run's transient strings then split, and at 10,000
// filesystems about 12 MB of the daemon's resident memory was free space between live chunks. Here a
// record of up to kLargest bytes takes a slot of its size class in 64 KiB slabs of their own: the next
// record of that class takes the slot back, and nothing else ever splits it. Larger ones (a host-wide
// probe's) come from operator new. Slabs are kept for the process's life: their slots are reused, and
// the population of each class changes slowly (a key's record stays in its class unless its text grows
// by more than the class's step).
#include <cstddef>
#include <new>

namespace fsaudit::metrics {

class RecordPool {
 public:
  static constexpr std::size_t kLargest = 4096;
  static void* allocate(std::size_t bytes);
  static void deallocate(void* p, std::size_t bytes) noexcept;
  struct Stats {
    std::size_t slab_bytes = 0;  // mapped for slabs (resident only where a slot was ever used)
    std::size_t used_bytes = 0;  // in slots taken now, by class size
  };
  static Stats stats();
  // False under ASan, where each record is its own allocation (so that a read past one is caught).
  static bool enabled();
};

// For std::allocate_shared_for_overwrite: the record and its shared_ptr's count in one pool slot.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT: rebinding, as allocators do
  T* allocate(std::size_t n) { return static_cast<T*>(RecordPool::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { RecordPool::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace fsaudit::metrics
