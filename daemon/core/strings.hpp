#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsaudit {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);      // keeps empty fields
std::vector<std::string_view> split_ws(std::string_view s);             // runs of blanks
std::vector<std::string_view> lines(std::string_view s);                // without '\n', drops a final empty line
std::optional<std::uint64_t> parse_u64(std::string_view s);             // whole field must be digits
std::optional<std::int64_t> parse_i64(std::string_view s);
std::optional<double> parse_double(std::string_view s);
std::string to_lower(std::string_view s);
// Decodes the octal escapes that /proc/self/mountinfo and /proc/mounts use ("\040" for a space).
std::string unescape_octal(std::string_view s);
// Shell-style glob with *, ? and [...], as fnmatch(3) without flags.
bool glob_match(std::string_view pattern, std::string_view text);
// Levenshtein distance, used for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace fsaudit
