#include "probes/zfs/scan.hpp"

#include <cctype>
#include <cmath>
#include <ctime>
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

// The scan header is matched by hand, not with std::regex (this runs on every probe run and fuzz
// input); each rule says the pattern it implements. A blank is an isspace() byte, a word byte
// isalnum() or '_' (the regex classes \s and \w).

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_blank(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Removes `prefix` from the front of `s` when it is there.
bool eat(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// ^(scrub|resilver): removed from the front of `s`.
ScanFunction eat_function(std::string_view& s) {
  if (eat(s, "scrub")) return ScanFunction::scrub;
  if (eat(s, "resilver")) return ScanFunction::resilver;
  return ScanFunction::none;
}

// `prefix(.+)$`: the non-empty rest after `prefix`.
std::optional<std::string_view> after(std::string_view s, std::string_view prefix) {
  if (!eat(s, prefix) || s.empty()) return std::nullopt;
  return s;
}

// ^(\S+)\b: the longest run of non-blanks that ends on a word boundary (inside the run when its
// last byte is not a word byte: "1.5%" -> "1.5"); none without a boundary ("...").
std::optional<std::string_view> token_to_boundary(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && !is_blank(s[n])) ++n;
  for (std::size_t k = n; k >= 1; --k) {
    bool next_is_word = k < s.size() && is_word(s[k]);
    if (is_word(s[k - 1]) != next_is_word) return s.substr(0, k);
  }
  return std::nullopt;
}

struct WithErrors {
  std::string_view elapsed, errors, date;
};

// ^(.+) with (\d+) errors on (.+)$, the first part as long as fits (a greedy `.+`).
std::optional<WithErrors> with_errors_on(std::string_view s) {
  constexpr std::string_view with = " with ";
  for (auto p = s.rfind(with); p != std::string_view::npos && p >= 1; p = s.rfind(with, p - 1)) {
    auto rest = s.substr(p + with.size());
    std::size_t d = 0;
    while (d < rest.size() && is_digit(rest[d])) ++d;
    if (auto date = after(rest.substr(d), " errors on "); d > 0 && date)
      return WithErrors{s.substr(0, p), rest.substr(0, d), *date};
  }
  return std::nullopt;
}

struct Repaired {
  std::string_view amount;
  WithErrors tail;
};

// ^(scrub repaired|resilvered) (\S+) in (.+) with (\d+) errors on (.+)$
std::optional<Repaired> repaired_in(std::string_view s) {
  if (!eat(s, "scrub repaired ") && !eat(s, "resilvered ")) return std::nullopt;
  std::size_t n = 0;
  while (n < s.size() && !is_blank(s[n])) ++n;
  auto rest = s.substr(n);
  if (n == 0 || !eat(rest, " in ")) return std::nullopt;
  auto tail = with_errors_on(rest);
  if (!tail) return std::nullopt;
  return Repaired{s.substr(0, n), *tail};
}

// After the function word: ^ (completed|stopped) after (.+) with (\d+) errors on (.+)$
std::optional<WithErrors> ended_after(std::string_view s) {
  if (!eat(s, " completed after ") && !eat(s, " stopped after ")) return std::nullopt;
  return with_errors_on(s);
}

// After the function word: ^(?: repaired (\S+))?\b -> the amount when there is one.
std::optional<std::string_view> repaired_amount(std::string_view s) {
  if (!eat(s, " repaired ")) return std::nullopt;
  return token_to_boundary(s);
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
  // Drop a "(draid2:4d:11c:0s)" annotation after the function word (sequential resilver):
  // ^(\w+) \([^)]*\) -> $1.
  std::size_t word = 0;
  while (word < header.size() && is_word(header[word])) ++word;
  if (word > 0 && header.compare(word, 2, " (") == 0)
    if (auto close = header.find(')', word + 2); close != std::string::npos) header.erase(word, close + 1 - word);

  // The first rule that matches the header decides (their order matters: the last two read what is
  // left of a truncated or unknown wording).
  const std::string_view h = header;
  std::string_view rest = h;  // after the function word
  const ScanFunction f = eat_function(rest);
  const bool fn = f != ScanFunction::none;
  if (h == "none requested") {
    s.recognized = true;
  } else if (auto since = after(rest, " in progress since "); fn && since) {
    s.function = f;
    s.state = ScanState::in_progress;
    s.start_time = parse_zpool_date(*since, tz);
    s.recognized = true;
  } else if (fn && after(rest, " paused since ")) {
    s.function = f;
    s.state = ScanState::paused;
    s.recognized = true;
  } else if (auto rep = repaired_in(h)) {
    s.function = h.starts_with("resilvered") ? ScanFunction::resilver : ScanFunction::scrub;
    s.state = ScanState::finished;
    s.repaired_bytes = bytes(rep->amount);
    s.duration_seconds = parse_zpool_elapsed(rep->tail.elapsed);
    s.errors = parse_u64(rep->tail.errors);
    s.end_time = parse_zpool_date(rep->tail.date, tz);
    s.recognized = true;
  } else if (auto on = after(rest, " canceled on "); fn && on) {
    s.function = f;
    s.state = ScanState::canceled;
    s.end_time = parse_zpool_date(*on, tz);
    s.recognized = true;
  } else if (auto end = ended_after(rest); fn && end) {
    s.function = f;
    s.state = rest.starts_with(" stopped") ? ScanState::canceled : ScanState::finished;
    s.duration_seconds = parse_zpool_elapsed(end->elapsed);
    s.errors = parse_u64(end->errors);
    s.end_time = parse_zpool_date(end->date, tz);
    s.recognized = true;
  } else if (auto for_ = after(rest, " in progress for "); fn && (rest == " in progress" || for_)) {
    // ^(scrub|resilver) in progress(?: for (.+))?$
    s.function = f;
    s.state = ScanState::in_progress;
    if (for_) s.duration_seconds = parse_zpool_elapsed(*for_);
    s.recognized = true;
  } else if (auto amount = repaired_amount(rest); fn && (amount || rest.empty() || !is_word(rest[0]))) {
    // ^(scrub|resilver)(?: repaired (\S+))?\b.*$: truncated or unknown wording; keep what is
    // certain, flag it.
    s.function = f;
    if (amount) {
      s.state = ScanState::finished;
      s.repaired_bytes = bytes(*amount);
    }
  } else if (auto r = h; eat(r, "resilvered ")) {
    // ^resilvered (\S+)\b.*$
    if (auto resilvered = token_to_boundary(r)) {
      s.function = ScanFunction::resilver;
      s.state = ScanState::finished;
      s.repaired_bytes = bytes(*resilvered);
    }
  }
  if (error_scrub && s.function == ScanFunction::scrub) s.function = ScanFunction::error_scrub;

  for (std::size_t r = 1; r < rows.size(); ++r) {
    // ^(?:scrub|resilver|error scrub) started on (.+)$
    std::string_view row = rows[r];
    if (eat(row, "scrub") || eat(row, "resilver") || eat(row, "error scrub"))
      if (auto date = after(row, " started on ")) {
        s.start_time = parse_zpool_date(*date, tz);
        continue;
      }
    for (auto c : split(rows[r], ',')) clauses.emplace_back(trim(c));
  }
  for (auto& c : clauses) parse_clause(c, s);
  return s;
}

}  // namespace fsaudit::zfs
