#pragma once
// Label values come from outside (tool output, mount and device names, kernel lines, failure
// reasons quoting any of those). Prometheus drops a whole scrape when one label value is not valid
// UTF-8, so every value is cleaned on its way into a metric family: the exposition then stays
// valid whatever a tool printed.
#include <cstddef>
#include <string>
#include <string_view>

namespace fsaudit::metrics {

// Longest label value kept, in bytes. Long enough for any path or a failure reason with context;
// short enough that junk output cannot bloat every scrape.
inline constexpr std::size_t kMaxLabelValueBytes = 512;

// Returns `v` as valid UTF-8 of at most `max_bytes` bytes:
//  * each byte of an invalid sequence (bad lead byte, truncated sequence, overlong form, surrogate,
//    code point above U+10FFFF) becomes U+FFFD;
//  * tab, CR and LF become a blank (reasons quoting multi-line output stay one line); other C0
//    controls and DEL become U+FFFD;
//  * a longer value is cut at a character boundary and ends in "..." (within max_bytes).
// Quotes and backslashes are left alone: the text exposition escapes them.
std::string clean_label_value(std::string_view v, std::size_t max_bytes = kMaxLabelValueBytes);

// True when clean_label_value would return `v` unchanged (fast path for the common case).
bool is_clean_label_value(std::string_view v, std::size_t max_bytes = kMaxLabelValueBytes);

}  // namespace fsaudit::metrics
