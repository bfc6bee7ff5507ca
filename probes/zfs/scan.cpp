#include "probes/zfs/scan.hpp"

#include <cmath>
#include <ctime>
#include <regex>
#include <vector>

#include "daemon/core/dates.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::zfs {

std::string_view to_string(ScanFunction f) {
  switch (f) {
    case ScanFunction::scrub: return "scrub";
    case ScanFunction::resilver: return "resilver";
    case ScanFunction::error_scrub: return "error_scrub";
    case ScanFunction::none: break;
  }
  return "none";
}

std::string_view to_string(ScanState s) {
  switch (s) {
    case ScanState::in_progress: return "in_progress";
    case ScanState::finished: return "finished";
    case ScanState::canceled: return "canceled";
    case ScanState::paused: return "paused";
    case ScanState::none: break;
  }
  return "none";
}

namespace {

std::string collapse_ws(std::string_view s) {
  std::string out;
  for (auto w : split_ws(s)) {
    if (!out.empty()) out += ' ';
    out.append(w);
  }
  return out;
}

std::optional<double> bytes(std::string_view s) {
  s = trim(s);
  if (s.ends_with("/s")) s.remove_suffix(2);
  auto r = parse_human_bytes(s);
  if (!r) return std::nullopt;
  return *r;
}

ScanFunction function_of(std::string_view w) {
  if (w == "scrub") return ScanFunction::scrub;
  if (w == "resilver" || w == "resilvered") return ScanFunction::resilver;
  return ScanFunction::none;
}

// One comma-separated clause of a progress line.
void parse_clause(std::string_view clause, ZfsScan& s) {
  auto t = split_ws(clause);
  if (t.empty()) return;
  auto n = t.size();
  // "... to go" (ETA), possibly after "scanned out of Z at R/s" in the same clause (pre-0.8).
  if (n >= 3 && t[n - 2] == "to" && t[n - 1] == "go") {
    std::string eta;
    for (std::size_t i = 0; i + 2 < n; ++i) eta += std::string(t[i]) + " ";
    if (auto e = parse_zpool_elapsed(eta)) s.eta_seconds = *e;
    return;
  }
  if (n == 2 && t[1] == "total") {
    s.total_bytes = bytes(t[0]);
    return;
  }
  if (n == 2 && t[1] == "done" && t[0].ends_with('%')) {
    if (auto p = parse_double(t[0].substr(0, t[0].size() - 1))) s.progress_ratio = *p / 100.0;
    return;
  }
  if (n == 2 && (t[1] == "repaired" || t[1] == "resilvered")) {
    s.repaired_bytes = bytes(t[0]);
    return;
  }
  // "X scanned [at R/s]", "X / Z scanned [at R/s]", "X scanned out of Z at R/s",
  // "Y issued [at R/s]", "Y / Z issued [at R/s]"
  std::size_t i = 1;
  std::optional<double> total;
  if (n >= 3 && t[1] == "/") {
    total = bytes(t[2]);
    i = 3;
  }
  if (i >= n) return;
  bool scanned = t[i] == "scanned", issued = t[i] == "issued";
  if (!scanned && !issued) return;
  auto first = bytes(t[0]);
  std::optional<double> rate;
  for (std::size_t k = i + 1; k < n; ++k) {
    if (t[k] == "out" && k + 2 < n && t[k + 1] == "of") total = bytes(t[k + 2]);
    if (t[k] == "at" && k + 1 < n) rate = bytes(t[k + 1]);
  }
  if (scanned) {
    s.examined_bytes = first;
    s.scan_rate_bytes_per_second = rate;
  } else {
    s.issued_bytes = first;
    s.issue_rate_bytes_per_second = rate;
  }
  if (total) s.total_bytes = total;
}

}  // namespace

std::optional<std::int64_t> parse_zpool_date(std::string_view text, ScanTimeZone tz) {
  return parse_c_date(text, tz == ScanTimeZone::utc);
}

std::optional<double> parse_zpool_elapsed(std::string_view text) {
  auto t = split_ws(text);
  if (t.empty()) return std::nullopt;
  double total = 0;
  std::size_t i = 0;
  // "N days HH:MM:SS" / "1 day HH:MM:SS"
  if (t.size() >= 3 && (t[1] == "days" || t[1] == "day")) {
    auto d = parse_u64(t[0]);
    if (!d) return std::nullopt;
    total += static_cast<double>(*d) * 86400;
    i = 2;
  }
  if (i + 1 != t.size()) return std::nullopt;
  std::string_view s = t[i];
  if (s.find(':') != std::string_view::npos) {  // HH:MM:SS (or MM:SS)
    auto parts = split(s, ':');
    double acc = 0;
    for (auto p : parts) {
      auto v = parse_u64(p);
      if (!v) return std::nullopt;
      acc = acc * 60 + static_cast<double>(*v);
    }
    return total + acc;
  }
  // "29h37m", "0h0m", "5m", "12s", "1h"
  double acc = 0, num = 0;
  bool have = false, any = false;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') {
      num = num * 10 + (ch - '0');
      have = true;
    } else if (have && (ch == 'h' || ch == 'm' || ch == 's' || ch == 'd')) {
      acc += num * (ch == 'd' ? 86400 : ch == 'h' ? 3600 : ch == 'm' ? 60 : 1);
      num = 0;
      have = false;
      any = true;
    } else {
      return std::nullopt;
    }
  }
  if (have || !any) return std::nullopt;
  return total + acc;
}

ZfsScan parse_zfs_scan(std::string_view scan_block, ScanTimeZone tz) {
  ZfsScan s;
  s.text = std::string(trim(scan_block));
  auto ls = lines(scan_block);
  std::vector<std::string> rows;
  for (auto l : ls) {
    auto c = collapse_ws(l);
    if (!c.empty()) rows.push_back(std::move(c));
  }
  if (rows.empty()) {
    s.recognized = true;
    return s;
  }
  // Strip a leading label.
  for (std::string_view label : {"scan:", "scrub:"}) {
    if (rows[0].starts_with(label)) {
      rows[0] = std::string(trim(std::string_view(rows[0]).substr(label.size())));
      break;
    }
  }
  std::string header = rows[0];
  // Solaris "scrub in progress for 0h0m, 12.34% done, 0h1m to go": clauses after the first comma.
  std::vector<std::string> clauses;
  if (auto comma = header.find(','); comma != std::string::npos) {
    for (auto c : split(std::string_view(header).substr(comma + 1), ',')) clauses.emplace_back(trim(c));
    header.resize(comma);
  }
  bool error_scrub = false;
  if (header.starts_with("error ")) {
    error_scrub = true;
    header.erase(0, 6);
  }
  // Drop a "(draid2:4d:11c:0s)" annotation after the function word (sequential resilver).
  static const std::regex paren(R"(^(\w+) \([^)]*\))");
  header = std::regex_replace(header, paren, "$1", std::regex_constants::format_first_only);

  static const std::regex re_none(R"(^none requested$)");
  static const std::regex re_progress(R"(^(scrub|resilver) in progress since (.+)$)");
  static const std::regex re_paused(R"(^(scrub|resilver) paused since (.+)$)");
  static const std::regex re_repaired(R"(^(scrub repaired|resilvered) (\S+) in (.+) with (\d+) errors on (.+)$)");
  static const std::regex re_canceled(R"(^(scrub|resilver) canceled on (.+)$)");
  static const std::regex re_completed(R"(^(scrub|resilver) (completed|stopped) after (.+) with (\d+) errors on (.+)$)");
  static const std::regex re_sol_progress(R"(^(scrub|resilver) in progress(?: for (.+))?$)");
  static const std::regex re_partial(R"(^(scrub|resilver)(?: repaired (\S+))?\b.*$)");
  static const std::regex re_partial2(R"(^resilvered (\S+)\b.*$)");

  std::smatch m;
  if (std::regex_match(header, m, re_none)) {
    s.recognized = true;
  } else if (std::regex_match(header, m, re_progress)) {
    s.function = function_of(m[1].str());
    s.state = ScanState::in_progress;
    s.start_time = parse_zpool_date(m[2].str(), tz);
    s.recognized = true;
  } else if (std::regex_match(header, m, re_paused)) {
    s.function = function_of(m[1].str());
    s.state = ScanState::paused;
    s.recognized = true;
  } else if (std::regex_match(header, m, re_repaired)) {
    s.function = m[1].str() == "resilvered" ? ScanFunction::resilver : ScanFunction::scrub;
    s.state = ScanState::finished;
    s.repaired_bytes = bytes(m[2].str());
    s.duration_seconds = parse_zpool_elapsed(m[3].str());
    s.errors = parse_u64(m[4].str());
    s.end_time = parse_zpool_date(m[5].str(), tz);
    s.recognized = true;
  } else if (std::regex_match(header, m, re_canceled)) {
    s.function = function_of(m[1].str());
    s.state = ScanState::canceled;
    s.end_time = parse_zpool_date(m[2].str(), tz);
    s.recognized = true;
  } else if (std::regex_match(header, m, re_completed)) {
    s.function = function_of(m[1].str());
    s.state = m[2].str() == "stopped" ? ScanState::canceled : ScanState::finished;
    s.duration_seconds = parse_zpool_elapsed(m[3].str());
    s.errors = parse_u64(m[4].str());
    s.end_time = parse_zpool_date(m[5].str(), tz);
    s.recognized = true;
  } else if (std::regex_match(header, m, re_sol_progress)) {
    s.function = function_of(m[1].str());
    s.state = ScanState::in_progress;
    if (m[2].matched) s.duration_seconds = parse_zpool_elapsed(m[2].str());
    s.recognized = true;
  } else if (std::regex_match(header, m, re_partial)) {
    // Truncated or unknown wording: keep what is certain, flag it.
    s.function = function_of(m[1].str());
    if (m[2].matched) {
      s.state = ScanState::finished;
      s.repaired_bytes = bytes(m[2].str());
    }
  } else if (std::regex_match(header, m, re_partial2)) {
    s.function = ScanFunction::resilver;
    s.state = ScanState::finished;
    s.repaired_bytes = bytes(m[1].str());
  }
  if (error_scrub && s.function == ScanFunction::scrub) s.function = ScanFunction::error_scrub;

  static const std::regex re_started(R"(^(?:scrub|resilver|error scrub) started on (.+)$)");
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (std::regex_match(rows[r], m, re_started)) {
      s.start_time = parse_zpool_date(m[1].str(), tz);
      continue;
    }
    for (auto c : split(rows[r], ',')) clauses.emplace_back(trim(c));
  }
  for (auto& c : clauses) parse_clause(c, s);
  return s;
}

}  // namespace fsaudit::zfs
