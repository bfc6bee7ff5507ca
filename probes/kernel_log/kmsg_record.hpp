#pragma once
// /dev/kmsg records, pure: the record parser and the sequence bookkeeping. No I/O here; the reader
// that owns the file descriptor is in kmsg.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fsaudit::kernel_log {

// One /dev/kmsg record: "prio,seq,ts_usec,flags[,...];message\n[ KEY=value\n]..." (see
// Documentation/ABI/testing/dev-kmsg). Non-printable bytes in the message arrive as "\xHH".
struct KmsgRecord {
  int level = 0;           // prio & 7
  int facility = 0;        // prio >> 3; 0 = the kernel itself, 1 = written by userspace to /dev/kmsg
  std::uint64_t seq = 0;   // 64-bit sequence number, starts at 0 every boot
  std::uint64_t ts_usec = 0;  // CLOCK_MONOTONIC-like time since boot
  char flags = '-';        // '-' or 'c' (continuation)
  std::string message;     // unescaped
};

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

// Skips records already counted (seq <= resume point) and counts gaps (records overwritten before
// they were read) as lost.
class SeqTracker {
 public:
  // resume_after: last seq counted before a restart (same boot). expect_from: the first seq that should
  // arrive (0 when reading a boot from its start); unset = accept whatever comes first.
  void reset(std::optional<std::uint64_t> resume_after, std::optional<std::uint64_t> expect_from) {
    last_ = resume_after;
    expected_ = resume_after ? std::optional<std::uint64_t>(*resume_after + 1) : expect_from;
    lost_ = 0;
  }
  // false = already seen, skip it.
  bool accept(std::uint64_t seq) {
    if (last_ && seq <= *last_) return false;
    if (expected_ && seq > *expected_) lost_ += seq - *expected_;
    expected_ = seq + 1;
    last_ = seq;
    return true;
  }
  std::optional<std::uint64_t> last() const { return last_; }
  std::uint64_t lost() const { return lost_; }

 private:
  std::optional<std::uint64_t> last_, expected_;
  std::uint64_t lost_ = 0;
};

}  // namespace fsaudit::kernel_log
