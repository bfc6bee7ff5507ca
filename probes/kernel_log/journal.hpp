#pragma once
// Kernel messages from the systemd journal (sd-journal, _TRANSPORT=kernel).
#include <cstdint>
#include <optional>
#include <string>

#include "daemon/core/result.hpp"

struct sd_journal;

namespace fsaudit::kernel_log {

struct JournalEntry {
  std::string message;
  std::uint64_t realtime_usec = 0;
};

class JournalReader {
 public:
  JournalReader() = default;
  ~JournalReader();
  JournalReader(const JournalReader&) = delete;
  JournalReader& operator=(const JournalReader&) = delete;

  // directory "" = the local system journal (SD_JOURNAL_LOCAL_ONLY). `cursor`: resume after that
  // entry; else start at the end (`from_boot` false) or at the first entry of the current boot.
  Result<void> open(const std::string& directory, const std::optional<std::string>& cursor, bool from_boot);
  bool is_open() const { return j_ != nullptr; }
  // open() was given a cursor the journal rejected and positioned at the tail instead.
  bool cursor_invalid() const { return cursor_invalid_; }

  // The next entry, or nullopt when nothing new is there; an error says why reading failed.
  Result<std::optional<JournalEntry>> next();
  // Cursor of the last entry returned (or the resume cursor).
  const std::optional<std::string>& cursor() const { return cursor_; }

 private:
  sd_journal* j_ = nullptr;
  std::optional<std::string> cursor_;
  bool cursor_invalid_ = false;
  bool pending_ = false;  // positioned on an entry not yet returned (after seeking to a vanished cursor)
};

}  // namespace fsaudit::kernel_log
