#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fsaudit {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);      // keeps empty fields
std::vector<std::string_view> split_ws(std::string_view s);             // runs of blanks
std::vector<std::string_view> lines(std::string_view s);                // without '\n', drops a final empty line
// The views point into the argument: a temporary string would leave them dangling (a range-for
// over lines(read_file(...).value_or("")) reads freed memory), so such a call does not compile.
template <class S>
  requires std::is_same_v<S, std::string>
std::vector<std::string_view> split(S&& s, char sep) = delete;
template <class S>
  requires std::is_same_v<S, std::string>
std::vector<std::string_view> split_ws(S&& s) = delete;
template <class S>
  requires std::is_same_v<S, std::string>
std::vector<std::string_view> lines(S&& s) = delete;
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
