#include "probes/kernel_log/journal.hpp"

#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>

#include <cstring>

namespace fsaudit::kernel_log {

namespace {
std::string errtext(int r) { return std::strerror(r < 0 ? -r : r); }
}  // namespace

JournalReader::~JournalReader() {
  if (j_) sd_journal_close(j_);
}

Result<void> JournalReader::open(const std::string& directory, const std::optional<std::string>& cursor,
                                 bool from_boot) {
  if (j_) {
    sd_journal_close(j_);
    j_ = nullptr;
  }
  int r = directory.empty() ? sd_journal_open(&j_, SD_JOURNAL_LOCAL_ONLY)
                            : sd_journal_open_directory(&j_, directory.c_str(), 0);
  if (r < 0) {
    j_ = nullptr;
    return err("sd_journal_open" + (directory.empty() ? std::string() : " " + directory) + ": " + errtext(r) +
               " (is the process in group systemd-journal or adm, or root?)");
  }
  if ((r = sd_journal_add_match(j_, "_TRANSPORT=kernel", 0)) < 0) return err("sd_journal_add_match: " + errtext(r));
  // Enables inotify so that sd_journal_process() notices rotated/new files; never blocks.
  (void)sd_journal_get_fd(j_);
  pending_ = false;
  cursor_invalid_ = false;
  cursor_ = cursor;
  if (cursor) {
    cursor_invalid_ = (r = sd_journal_seek_cursor(j_, cursor->c_str())) < 0;
    // A cursor the journal cannot parse (a damaged state file) must not stop the watcher for good: it
    // continues at the tail, and the caller counts the gap.
    r = cursor_invalid_ ? 0 : sd_journal_next(j_);
    if (r > 0 && sd_journal_test_cursor(j_, cursor->c_str()) <= 0) pending_ = true;  // cursor entry vacuumed
    if (r == 0) {  // nothing at or after the cursor: go to the end
      sd_journal_seek_tail(j_);
      sd_journal_previous(j_);
      char* c = nullptr;
      if (cursor_invalid_ && sd_journal_get_cursor(j_, &c) >= 0 && c) {
        cursor_ = std::string(c);
        free(c);
      }
    }
  } else if (from_boot) {
    sd_id128_t boot;
    if ((r = sd_id128_get_boot(&boot)) < 0) return err("sd_id128_get_boot: " + errtext(r));
    if ((r = sd_journal_seek_monotonic_usec(j_, boot, 0)) < 0) return err("sd_journal_seek_monotonic_usec: " + errtext(r));
    pending_ = sd_journal_next(j_) > 0;
  } else {
    if ((r = sd_journal_seek_tail(j_)) < 0) return err("sd_journal_seek_tail: " + errtext(r));
    sd_journal_previous(j_);  // positioned on the last entry; next() returns only newer ones
    char* c = nullptr;
    if (sd_journal_get_cursor(j_, &c) >= 0 && c) {
      cursor_ = std::string(c);
      free(c);
    }
  }
  return {};
}

Result<std::optional<JournalEntry>> JournalReader::next() {
  if (!j_) return err("journal is not open");
  if (!pending_) {
    int r = sd_journal_next(j_);
    if (r == 0) {
      sd_journal_process(j_);  // pick up appended data and new files, then try once more
      r = sd_journal_next(j_);
    }
    if (r < 0) return err("sd_journal_next: " + errtext(r));
    if (r == 0) return std::optional<JournalEntry>{};
  }
  pending_ = false;
  JournalEntry e;
  const void* data = nullptr;
  size_t len = 0;
  if (sd_journal_get_data(j_, "MESSAGE", &data, &len) >= 0 && len > 8)
    e.message.assign(static_cast<const char*>(data) + 8, len - 8);
  uint64_t rt = 0;
  e.realtime_usec = sd_journal_get_realtime_usec(j_, &rt) >= 0 ? rt : 0;
  char* c = nullptr;
  if (sd_journal_get_cursor(j_, &c) >= 0 && c) {
    cursor_ = std::string(c);
    free(c);
  }
  return std::optional<JournalEntry>{std::move(e)};
}

}  // namespace fsaudit::kernel_log
