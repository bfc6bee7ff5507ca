#pragma once
// The one reading of the dates storage tools print with C-locale "%c" ("Sun Jul 16 23:21:45 2023";
// zpool status, btrfs scrub status): pure, no clock.
#include <cstdint>
#include <optional>
#include <string_view>

namespace fsaudit {

// Runs of blanks count as one ("Jul  7"). `utc`: the text is UTC; otherwise the process's local
// time zone (the tools print local time on the host that ran them). nullopt on anything else.
std::optional<std::int64_t> parse_c_date(std::string_view text, bool utc = false);

}  // namespace fsaudit
