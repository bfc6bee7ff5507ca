#pragma once
// /dev/kmsg reader: owns the file descriptor, never blocks. The record format and the sequence
// bookkeeping are pure and live in kmsg_record.hpp.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "daemon/core/result.hpp"
#include "probes/kernel_log/kmsg_record.hpp"

namespace fsaudit::kernel_log {

// Reads records without ever blocking. Loss (records overwritten in the ring buffer before we read them:
// read(2) fails with EPIPE and the sequence numbers jump) is counted from the sequence gaps.
class KmsgReader {
 public:
  KmsgReader() = default;
  ~KmsgReader();
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;

  // Opens `path` O_RDONLY|O_NONBLOCK. `resume_after`: skip records with seq <= it (same boot);
  // `from_end`: start after the newest record now in the buffer (read through, not counted, so that
  // last_seq() names the start position and a caller can save it before counting anything);
  // otherwise start at the oldest record.
  Result<void> open(const std::filesystem::path& path, std::optional<std::uint64_t> resume_after, bool from_end);
  bool is_open() const { return fd_ >= 0; }

  // Next record, or nullopt when nothing new is there; an error says why reading failed.
  Result<std::optional<KmsgRecord>> next();

  // The last record counted, or the start position; unset when starting before the oldest record.
  std::optional<std::uint64_t> last_seq() const { return seq_.last(); }
  std::uint64_t lost() const { return seq_.lost(); }

 private:
  // One raw read: a record, nullopt (EAGAIN / end) or an error.
  Result<std::optional<KmsgRecord>> read_record();

  int fd_ = -1;
  SeqTracker seq_;
  std::string buf_;
};

}  // namespace fsaudit::kernel_log
