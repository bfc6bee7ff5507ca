#include "probes/bcachefs/scrub_output.hpp"

#include <cctype>
#include <map>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::bcachefs {
namespace {

// Removes ANSI CSI sequences ("\033[1A", "\33[2K") and splits on both '\n' and '\r'.
std::vector<std::string> screen_lines(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\033') {
      size_t j = i + 1;
      if (j < text.size() && text[j] == '[') {
        ++j;
        while (j < text.size() && !std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
      }
      i = j;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool is_unit(std::string_view t) {
  static const char* units[] = {"B", "k", "K", "M", "G", "T", "P", "E", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
                                "kB", "KB", "MB", "GB", "TB", "PB"};
  for (auto u : units)
    if (t == u) return true;
  return false;
}

std::optional<double> size_of(std::string s) {
  // bcachefs prints "1.00 GiB" (unit split off) or "1.0G"; also plain numbers of bytes.
  if (auto v = parse_double(s)) return *v;
  auto r = parse_human_bytes(s);
  if (r) return *r;
  return std::nullopt;
}

}  // namespace

namespace {
double sum(const std::vector<BcachefsScrubDevice>& devices, double BcachefsScrubDevice::*field) {
  double s = 0;
  for (const auto& d : devices) s += d.*field;
  return s;
}
}  // namespace

double BcachefsScrub::checked_bytes() const { return sum(devices, &BcachefsScrubDevice::checked_bytes); }
double BcachefsScrub::total_bytes() const { return sum(devices, &BcachefsScrubDevice::total_bytes); }
double BcachefsScrub::corrected_bytes() const { return sum(devices, &BcachefsScrubDevice::corrected_bytes); }
double BcachefsScrub::uncorrected_bytes() const { return sum(devices, &BcachefsScrubDevice::uncorrected_bytes); }
bool BcachefsScrub::complete() const {
  if (devices.empty()) return false;
  for (const auto& d : devices)
    if (d.state != "complete") return false;
  return true;
}

Result<BcachefsScrub> parse_bcachefs_scrub(std::string_view text) {
  BcachefsScrub out;
  bool header = false;
  std::vector<std::string> order;
  std::map<std::string, BcachefsScrubDevice> last;
  for (const auto& raw : screen_lines(text)) {
    auto f = split_ws(raw);
    if (f.empty()) continue;
    if (f[0] == "device" && f.size() >= 5 && f[1] == "checked") {
      header = true;
      continue;
    }
    if (!header) continue;
    // Merge "1.00" "GiB" into one token.
    std::vector<std::string> t;
    for (size_t i = 1; i < f.size(); ++i) {
      if (!t.empty() && is_unit(f[i]) && parse_double(t.back())) t.back() += std::string(f[i]);
      else if (!t.empty() && f[i].size() > 4 && f[i].substr(f[i].size() - 4) == "/sec" && is_unit(f[i].substr(0, f[i].size() - 4)) &&
               parse_double(t.back()))
        t.back() += std::string(f[i]);
      else t.emplace_back(f[i]);
    }
    if (t.size() < 6) continue;
    BcachefsScrubDevice d;
    d.name = std::string(f[0]);
    auto c = size_of(t[0]), co = size_of(t[1]), u = size_of(t[2]), to = size_of(t[3]);
    if (!c || !co || !u || !to || t[4].empty() || t[4].back() != '%') continue;
    d.checked_bytes = *c;
    d.corrected_bytes = *co;
    d.uncorrected_bytes = *u;
    d.total_bytes = *to;
    d.percent = static_cast<int>(parse_u64(t[4].substr(0, t[4].size() - 1)).value_or(0));
    if (t[5] == "complete" || t[5] == "offline") {
      d.state = t[5];
    } else if (t[5].size() > 4 && t[5].substr(t[5].size() - 4) == "/sec") {
      d.state = "running";
      d.rate_bytes_per_second = size_of(t[5].substr(0, t[5].size() - 4));
    } else {
      continue;
    }
    if (!last.count(d.name)) order.push_back(d.name);
    last[d.name] = d;
  }
  if (!header) return err("no bcachefs scrub table (no \"device checked corrected uncorrected total\" header)");
  for (const auto& n : order) out.devices.push_back(last[n]);
  return out;
}

std::optional<std::pair<int, int>> parse_bcachefs_version(std::string_view text) {
  for (auto tok : split_ws(text)) {
    auto s = tok;
    if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.remove_prefix(1);
    auto p = split(s, '.');
    if (p.size() < 2) continue;
    std::string minor;
    for (char c : p[1]) {
      if (!std::isdigit(static_cast<unsigned char>(c))) break;
      minor += c;
    }
    auto a = parse_u64(p[0]);
    auto b = parse_u64(minor);
    if (a && b) return std::make_pair(static_cast<int>(*a), static_cast<int>(*b));
  }
  return std::nullopt;
}

}  // namespace fsaudit::bcachefs
