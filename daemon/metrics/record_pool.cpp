#include "daemon/metrics/record_pool.hpp"

#include <sys/mman.h>

#include <array>
#include <mutex>

#if defined(__SANITIZE_ADDRESS__)
#define FSAUDIT_RECORD_POOL_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FSAUDIT_RECORD_POOL_OFF 1
#endif
#endif

namespace fsaudit::metrics {
namespace {

constexpr std::size_t kSlab = 64 * 1024;
// Size classes: 16-byte steps up to 1 KiB (most records: a filesystem's own, 200-400 bytes), then
// 64-byte steps up to kLargest.
constexpr std::size_t kFine = 1024, kFineStep = 16, kCoarseStep = 64;
constexpr std::size_t kFineClasses = kFine / kFineStep;
constexpr std::size_t kClasses = kFineClasses + (RecordPool::kLargest - kFine) / kCoarseStep;

constexpr std::size_t class_of(std::size_t n) {  // 1 <= n <= kLargest
  if (n <= kFine) return (n + kFineStep - 1) / kFineStep - 1;
  return kFineClasses + (n - kFine + kCoarseStep - 1) / kCoarseStep - 1;
}
constexpr std::size_t size_of_class(std::size_t c) {
  return c < kFineClasses ? (c + 1) * kFineStep : kFine + (c - kFineClasses + 1) * kCoarseStep;
}
static_assert(class_of(1) == 0 && class_of(16) == 0 && class_of(17) == 1 && class_of(1024) == kFineClasses - 1);
static_assert(class_of(1025) == kFineClasses && class_of(RecordPool::kLargest) == kClasses - 1);
static_assert(size_of_class(class_of(1025)) == 1088 && size_of_class(kClasses - 1) == RecordPool::kLargest);

struct Pool {
  struct Class {
    void* free = nullptr;  // slots given back: each holds the next one's address
    char* next = nullptr;  // the slab being carved, from here to `end`
    char* end = nullptr;
  };
  std::mutex mu;
  std::array<Class, kClasses> classes{};
  std::size_t slab_bytes = 0, used_bytes = 0;
};

// Never destroyed: a record may be let go of during static destruction (an exposition a thread holds).
Pool& pool() {
  static auto* p = new Pool;
  return *p;
}

bool pooled(std::size_t bytes) {
#ifdef FSAUDIT_RECORD_POOL_OFF
  (void)bytes;
  return false;  // under ASan every record is its own allocation, so that a read past one is caught
#else
  return bytes > 0 && bytes <= RecordPool::kLargest;
#endif
}

}  // namespace

void* RecordPool::allocate(std::size_t bytes) {
  if (!pooled(bytes)) return ::operator new(bytes);
  auto& p = pool();
  const std::size_t c = class_of(bytes), size = size_of_class(c);
  std::lock_guard l(p.mu);
  auto& k = p.classes[c];
  void* slot;
  if (k.free) {
    slot = k.free;
    k.free = *static_cast<void**>(slot);
  } else {
    if (static_cast<std::size_t>(k.end - k.next) < size) {
      void* m = ::mmap(nullptr, kSlab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      p.slab_bytes += kSlab;
      k.next = static_cast<char*>(m);
      k.end = k.next + kSlab;
    }
    slot = k.next;
    k.next += size;
  }
  p.used_bytes += size;
  return slot;
}

void RecordPool::deallocate(void* slot, std::size_t bytes) noexcept {
  if (!slot) return;
  if (!pooled(bytes)) {
    ::operator delete(slot);
    return;
  }
  auto& p = pool();
  const std::size_t c = class_of(bytes);
  std::lock_guard l(p.mu);
  auto& k = p.classes[c];
  *static_cast<void**>(slot) = k.free;
  k.free = slot;
  p.used_bytes -= size_of_class(c);
}

bool RecordPool::enabled() { return pooled(1); }

RecordPool::Stats RecordPool::stats() {
  auto& p = pool();
  std::lock_guard l(p.mu);
  return {p.slab_bytes, p.used_bytes};
}

}  // namespace fsaudit::metrics
