#pragma once
// /dev/kmsg: record parser (pure) and a non-blocking reader.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

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

// Sequence bookkeeping, separate from the fd so that it is unit-tested: skips records already
// counted (seq <= resume point) and counts gaps (records overwritten before they were read) as lost.
class SeqTracker {
 public:
  // resume_after: last seq counted before a restart (same boot). expect_from: the first seq that should
  // arrive (0 when reading a boot from its start); unset = accept whatever comes first (started at end).
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

// Reads records without ever blocking. Loss (records overwritten in the ring buffer before we read them:
// read(2) fails with EPIPE and the sequence numbers jump) is counted from the sequence gaps.
class KmsgReader {
 public:
  KmsgReader() = default;
  ~KmsgReader();
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;

  // Opens `path` O_RDONLY|O_NONBLOCK. `resume_after`: skip records with seq <= it (same boot);
  // `from_end`: start at the current end of the buffer; otherwise start at the oldest record.
  Result<void> open(const std::filesystem::path& path, std::optional<std::uint64_t> resume_after, bool from_end);
  bool is_open() const { return fd_ >= 0; }

  enum class Status { record, empty, error };
  // Next record, or empty when nothing new is there. On error, *error says why.
  Status next(KmsgRecord* out, std::string* error);

  std::optional<std::uint64_t> last_seq() const { return seq_.last(); }
  std::uint64_t lost() const { return seq_.lost(); }

 private:
  int fd_ = -1;
  SeqTracker seq_;
  std::string buf_;
};

}  // namespace fsaudit::kernel_log
