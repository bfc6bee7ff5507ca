#pragma once
// Strict field readers for the canary state files root acts on (the in-flight marker, the identity
// record). nlohmann's value() converts whatever it finds (a negative number wraps, 1e30 is cast to
// an integer, which is undefined behaviour), so a field these give back has exactly the type and
// range its writer gives it, or the error names the field.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit::canary::state_json {

// The largest state file the readers accept; the writers' files are a few KiB.
inline constexpr std::size_t kMaxStateFileBytes = 64 << 10;
// The longest string field (paths, hex bytes of one injection, ids).
inline constexpr std::size_t kMaxStringBytes = 8192;

// The text of a state file: nullopt when there is none; an error for a symlink (never followed),
// anything but a regular file (a FIFO would block root), or a file over kMaxStateFileBytes.
Result<std::optional<std::string>> read_state_file(const std::filesystem::path& path);

// A JSON object of at most kMaxStateFileBytes (UTF-8 as JSON requires), or why not.
Result<nlohmann::json> parse_object(std::string_view text);

// Each: nullopt when `key` is absent; an error when present with another type or out of range.
Result<std::optional<std::string>> string_field(const nlohmann::json& obj, const char* key);
Result<std::optional<std::uint64_t>> u64_field(const nlohmann::json& obj, const char* key,
                                              std::uint64_t max = UINT64_MAX);
// A finite number.
Result<std::optional<double>> number_field(const nlohmann::json& obj, const char* key);

}  // namespace fsaudit::canary::state_json
