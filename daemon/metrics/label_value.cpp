#include "daemon/metrics/label_value.hpp"

#include <algorithm>

namespace fsaudit::metrics {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kEllipsis = "...";

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid (RFC 3629).
std::size_t utf8_len(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c == 0xED) n = 3, hi = 0x9F;  // no UTF-16 surrogates
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c == 0xF4) n = 4, hi = 0x8F;  // nothing above U+10FFFF
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

}  // namespace

bool is_clean_label_value(std::string_view v, std::size_t max_bytes) {
  if (v.size() > max_bytes) return false;
  for (std::size_t i = 0; i < v.size();) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7F) {  // printable ASCII: nearly every byte of every value
      ++i;
      continue;
    }
    auto n = utf8_len(v, i);
    if (n == 0 || (n == 1 && is_control(static_cast<unsigned char>(v[i])))) return false;
    i += n;
  }
  return true;
}

std::string clean_label_value(std::string_view v, std::size_t max_bytes) {
  if (is_clean_label_value(v, max_bytes)) return std::string(v);
  std::string out;
  out.reserve(std::min(v.size(), max_bytes) + 8);
  std::size_t fits = 0;  // length of the prefix that leaves room for the ellipsis
  const std::size_t limit = max_bytes >= kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  for (std::size_t i = 0; i < v.size() && out.size() <= max_bytes;) {
    auto n = utf8_len(v, i);
    if (n == 0) {
      out.append(kReplacement);
      n = 1;
    } else if (n == 1 && is_control(static_cast<unsigned char>(v[i]))) {
      char c = v[i];
      if (c == '\t' || c == '\n' || c == '\r') out.push_back(' ');
      else out.append(kReplacement);
    } else {
      out.append(v.substr(i, n));
    }
    if (out.size() <= limit) fits = out.size();
    i += n;
  }
  if (out.size() <= max_bytes) return out;
  out.resize(fits);
  out.append(kEllipsis.substr(0, max_bytes - fits));
  return out;
}

}  // namespace fsaudit::metrics
