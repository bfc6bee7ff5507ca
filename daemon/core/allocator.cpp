#include "daemon/core/allocator.hpp"

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

// jemalloc's control call, present only where the process runs on jemalloc (linked, or preloaded by a
// benchmark): a weak reference is null everywhere else.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen)
    __attribute__((weak));

namespace fsaudit {
namespace {

// glibc's tuning (tune_allocator, release_free_memory), said once for the code and the log.
constexpr int kMmapThresholdBytes = 128 * 1024;
constexpr std::int64_t kTrimEverySeconds = 60;

bool on_jemalloc() { return mallctl != nullptr; }

template <typename T>
bool read_ctl(const char* name, T& out) {
  std::size_t len = sizeof(T);
  return mallctl(name, &out, &len, nullptr, 0) == 0 && len == sizeof(T);
}

}  // namespace

AllocatorInfo allocator_info() {
  if (!on_jemalloc())
    return {"glibc", "", "one arena, mmap threshold " + std::to_string(kMmapThresholdBytes / 1024) + " KiB, trimmed every " +
                             std::to_string(kTrimEverySeconds) + " s"};
  AllocatorInfo info{"jemalloc", "", ""};
  const char* version = nullptr;
  if (read_ctl("version", version) && version) info.version = version;
  unsigned narenas = 0;
  bool tcache = false;
  ssize_t dirty = 0, muzzy = 0;
  const bool ok = read_ctl("opt.narenas", narenas) && read_ctl("opt.tcache", tcache) &&
                  read_ctl("opt.dirty_decay_ms", dirty) && read_ctl("opt.muzzy_decay_ms", muzzy);
  info.settings = ok ? "narenas " + std::to_string(narenas) + ", tcache " + (tcache ? "on" : "off") +
                           ", dirty_decay_ms " + std::to_string(dirty) + ", muzzy_decay_ms " + std::to_string(muzzy)
                     : "settings unreadable";
  return info;
}

// glibc gives each thread that meets a locked arena an arena of its own (up to 8 per core), and
// memory freed in one stays there: with probes landing on whichever worker is free, every worker's
// arena would keep its own high-water mark of batches and exposition text. This daemon allocates
// little and rarely, so one arena costs no measurable contention. A fixed mmap threshold keeps the
// large, short-lived blocks (a scrape's exposition, a tool's output) out of the heap: glibc would
// otherwise raise the threshold after the first such free and let the next ones fragment the heap.
void tune_allocator() {
  if (on_jemalloc()) return;
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  });
}

// What a burst of work freed (a scrape's exposition, the first cycle's batches) stays in glibc's heap
// as free chunks between live ones; returning whole free pages now and then keeps RSS near what is
// live (about half the heap at 1,000 filesystems). A minute apart: a trim walks the heap (7-17 ms for a
// fragmented 25 MB heap on this machine, `malloc_trim(0)` timed in a standalone program).
void release_free_memory() {
  if (on_jemalloc()) return;
  static std::atomic<std::int64_t> last{0};
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  auto seen = last.load(std::memory_order_relaxed);
  if (now - seen < kTrimEverySeconds || !last.compare_exchange_strong(seen, now)) return;
  malloc_trim(0);
}

}  // namespace fsaudit
