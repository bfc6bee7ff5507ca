#pragma once
// Logging goes through spdlog. Under journald (JOURNAL_STREAM set, as systemd sets for a service whose
// stderr is the journal) entries go through sd-journal instead, as structured records whose fields
// (FSAUDIT_PROBE, FSAUDIT_TARGET, PRIORITY, ...) can be filtered with journalctl.
#include <spdlog/spdlog.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace fsaudit::logging {

using Fields = std::vector<std::pair<std::string, std::string>>;

// Sets up the default logger: journald when JOURNAL_STREAM is set (or force_journal), else stderr.
void init(const std::string& level, bool force_journal = false);
bool to_journal();
void set_level(const std::string& level);

// A message with structured fields, e.g. {{"PROBE","zfs"},{"TARGET","tank"}} -> FSAUDIT_PROBE=zfs.
void log(spdlog::level::level_enum level, const std::string& message, const Fields& fields = {});

}  // namespace fsaudit::logging
