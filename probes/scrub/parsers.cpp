#include "probes/scrub/parsers.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <cstdio>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::scrub {

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
