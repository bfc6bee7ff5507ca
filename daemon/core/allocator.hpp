#pragma once
// Which malloc this process runs on, and the tuning that goes with it. fsauditd links jemalloc with
// its settings in the binary (fsauditd/jemalloc_conf.cpp); sanitizer builds, the tests and any binary
// that does not link it run on glibc's malloc, tuned here.
#include <string>

namespace fsaudit {

struct AllocatorInfo {
  std::string name;      // "jemalloc" or "glibc"
  std::string version;   // jemalloc's version string; empty for glibc
  std::string settings;  // what the allocator reports back, for the log: "narenas 1, tcache off, ..."
};
AllocatorInfo allocator_info();

// glibc: one malloc arena for the whole process and a fixed mmap threshold (allocator.cpp says why);
// jemalloc: nothing, its settings are read at its first allocation. Call it before the first thread
// starts: a thread that already has an arena of its own keeps it (seen at 1,000 filesystems: the HTTP
// threads, started before the pool, held a second arena of 6 MB).
void tune_allocator();

// Returns free heap pages to the kernel, at most once a minute whoever calls (glibc's malloc_trim);
// jemalloc returns them itself as they fall free (dirty_decay_ms 0).
void release_free_memory();

}  // namespace fsaudit
