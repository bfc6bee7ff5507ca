#pragma once
// Pure parser for md's scrub progress file (string in, numbers out).
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace fsaudit::md {

// <sysfs>/block/mdX/md/sync_completed: "123 / 456" (sectors) or "none".
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_md_sync_completed(std::string_view text);

}  // namespace fsaudit::md
