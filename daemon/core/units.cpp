#include "daemon/core/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace fsaudit {
namespace {

bool parse_number(std::string_view s, double& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::string_view s = trim(text);
  const std::string bad = "invalid duration \"" + std::string(text) +
                          "\" (use a number with a unit: 250ms, 30s, 5m, 6h, 7d, 1w)";
  if (s.empty()) return err(bad);
  double plain = 0;
  if (parse_number(s, plain)) {
    if (plain < 0) return err(bad);
    return std::chrono::milliseconds(static_cast<long long>(std::llround(plain * 1000)));
  }
  double total_ms = 0;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    double n = 0;
    if (i == 0 || !parse_number(s.substr(0, i), n)) return err(bad);
    s.remove_prefix(i);
    size_t j = 0;
    while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) ++j;
    std::string_view unit = s.substr(0, j);
    s.remove_prefix(j);
    double mult;
    if (unit == "ms") mult = 1;
    else if (unit == "s") mult = 1000;
    else if (unit == "m") mult = 60e3;
    else if (unit == "h") mult = 3600e3;
    else if (unit == "d") mult = 86400e3;
    else if (unit == "w") mult = 7 * 86400e3;
    else return err(bad);
    total_ms += n * mult;
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(total_ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
  long long ms = d.count();
  if (ms % 86400000 == 0 && ms) return std::to_string(ms / 86400000) + "d";
  if (ms % 3600000 == 0 && ms) return std::to_string(ms / 3600000) + "h";
  if (ms % 60000 == 0 && ms) return std::to_string(ms / 60000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::string format_seconds(double s) {
  constexpr double kDay = 86400;
  if (!std::isfinite(s)) return "never";
  char buf[32];
  if (s < 1) std::snprintf(buf, sizeof buf, "%.2g ms", s * 1000);
  else if (s < 120) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  else if (s < 2 * kDay) std::snprintf(buf, sizeof buf, "%.0f h", s / 3600);
  else std::snprintf(buf, sizeof buf, "%.0f d", s / kDay);
  return buf;
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 5) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string_view s = trim(text);
  const std::string bad = "invalid size \"" + std::string(text) +
                          "\" (use bytes or a unit: 4096, 512B, 64KiB, 64MiB, 1GiB, 1GB)";
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  double n = 0;
  if (i == 0 || !parse_number(s.substr(0, i), n) || n < 0) return err(bad);
  std::string_view unit = trim(s.substr(i));
  double mult;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K" || unit == "k") mult = 1024.0;
  else if (unit == "MiB" || unit == "M") mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "TiB" || unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "KB" || unit == "kB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else if (unit == "TB") mult = 1e12;
  else return err(bad);
  double v = n * mult;
  if (v > 1.8e19) return err(bad);
  return static_cast<std::uint64_t>(std::llround(v));
}

Result<double> parse_human_bytes(std::string_view text) {
  std::string_view s = trim(text);
  const std::string bad = "unrecognised byte count \"" + std::string(text) + "\"";
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '-')) ++i;
  double n = 0;
  if (i == 0 || !parse_number(s.substr(0, i), n)) return err(bad);
  std::string_view unit = trim(s.substr(i));
  if (unit.ends_with("iB")) unit.remove_suffix(2);
  else if (unit.size() > 1 && unit.ends_with("B")) unit.remove_suffix(1);
  static constexpr std::string_view kUnits = "BKMGTPE";
  if (unit.empty()) return n;
  if (unit.size() != 1) return err(bad);
  auto pos = kUnits.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
  if (pos == std::string_view::npos) return err(bad);
  return n * std::pow(1024.0, static_cast<double>(pos));
}

}  // namespace fsaudit
