#include "probes/scrub/parsers.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::scrub {
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

std::optional<std::uint64_t> number_after(std::string_view line, std::string_view key) {
  auto p = line.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  auto rest = trim(line.substr(p + key.size()));
  size_t n = 0;
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
  if (n == 0) return std::nullopt;
  return parse_u64(rest.substr(0, n));
}

}  // namespace

double BcachefsScrub::checked_bytes() const {
  double s = 0;
  for (const auto& d : devices) s += d.checked_bytes;
  return s;
}
double BcachefsScrub::total_bytes() const {
  double s = 0;
  for (const auto& d : devices) s += d.total_bytes;
  return s;
}
double BcachefsScrub::corrected_bytes() const {
  double s = 0;
  for (const auto& d : devices) s += d.corrected_bytes;
  return s;
}
double BcachefsScrub::uncorrected_bytes() const {
  double s = 0;
  for (const auto& d : devices) s += d.uncorrected_bytes;
  return s;
}
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

std::uint64_t XfsScrubResult::uncorrectable() const {
  std::uint64_t c = corruptions_found.value_or(corruption_lines);
  std::uint64_t u = unfixable_found.value_or(unfixable_lines);
  return c + u;
}
std::uint64_t XfsScrubResult::found() const { return uncorrectable() + repairs_made.value_or(0); }

XfsScrubResult parse_xfs_scrub(std::string_view text) {
  XfsScrubResult r;
  for (auto line : lines(text)) {
    auto l = trim(line);
    if (l.rfind("Corruption:", 0) == 0) r.corruption_lines++;
    else if (l.rfind("Unfixable Error:", 0) == 0) r.unfixable_lines++;
    else if (l.rfind("Error:", 0) == 0) r.error_lines++;
    if (l.find("Optimization is possible") != std::string_view::npos ||
        l.find("Attempting optimization") != std::string_view::npos ||
        l.find("Optimizations of ") != std::string_view::npos)
      r.optimization_lines++;
    if (auto v = number_after(l, "corruptions found:")) r.corruptions_found = *v;
    if (auto v = number_after(l, "unfixable errors found:")) r.unfixable_found = *v;
    if (auto v = number_after(l, "repairs made:")) r.repairs_made = *v;
    if (auto v = number_after(l, "warnings found:")) r.warnings_found = *v;
    if (auto v = number_after(l, "operational errors found:")) r.operational_errors = *v;
    auto df = l.find(" data found;");
    if (df != std::string_view::npos && l.find("realtime") > df) {
      std::string v(trim(l.substr(0, df)));
      std::replace(v.begin(), v.end(), ',', '.');
      if (auto b = parse_human_bytes(v)) r.data_found_bytes = *b;
    }
    std::string low = to_lower(l);
    if (low.find("kernel metadata scrubbing facility is not available") != std::string::npos ||
        (low.find("kernel metadata scrub") != std::string::npos && low.find("not") != std::string::npos) ||
        low.find("online scrub is not supported") != std::string::npos)
      r.kernel_unsupported = true;
  }
  return r;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_md_sync_completed(std::string_view text) {
  auto p = split(trim(text), '/');
  if (p.size() != 2) return std::nullopt;
  auto a = parse_u64(trim(p[0])), b = parse_u64(trim(p[1]));
  if (!a || !b) return std::nullopt;
  return std::make_pair(*a, *b);
}

std::optional<double> parse_pressure_some_avg10(std::string_view text) {
  for (auto line : lines(text)) {
    auto f = split_ws(line);
    if (f.empty() || f[0] != "some") continue;
    for (auto kv : f)
      if (kv.rfind("avg10=", 0) == 0) return parse_double(kv.substr(6));
  }
  return std::nullopt;
}

std::map<std::string, std::uint64_t> parse_diskstats_io_ticks(std::string_view text) {
  std::map<std::string, std::uint64_t> out;
  for (auto line : lines(text)) {
    auto f = split_ws(line);
    if (f.size() < 14) continue;
    if (auto v = parse_u64(f[12])) out[std::string(f[2])] = *v;
  }
  return out;
}

std::optional<double> diskstats_utilisation(const std::map<std::string, std::uint64_t>& before,
                                            const std::map<std::string, std::uint64_t>& after, double elapsed_ms) {
  if (elapsed_ms <= 0 || before.empty()) return std::nullopt;
  double best = 0;
  bool any = false;
  for (const auto& [dev, t] : after) {
    auto it = before.find(dev);
    if (it == before.end() || t < it->second) continue;
    any = true;
    best = std::max(best, std::min(100.0, static_cast<double>(t - it->second) * 100.0 / elapsed_ms));
  }
  if (!any) return std::nullopt;
  return best;
}

std::string systemd_escape_path(std::string_view path) {
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t s = 0;
  while (s < p.size() && p[s] == '/') ++s;
  p = p.substr(s);
  if (p.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c == '/') out += '-';
    else if (std::isalnum(c) || c == ':' || c == '_' || (c == '.' && i > 0)) out += static_cast<char>(c);
    else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  return out;
}

}  // namespace fsaudit::scrub
