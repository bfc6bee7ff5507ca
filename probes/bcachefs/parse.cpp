// Pure parsers of the bcachefs sysfs files (parse.hpp); the probe finds and reads them.
#include "probes/bcachefs/parse.hpp"

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::bcachefs {

Result<IoErrors> parse_io_errors(std::string_view text) {
  // The kernel ends every line with a newline; without it the last counter may be cut ("1" of "17").
  if (!text.empty() && text.back() != '\n')
    return err("io_errors: ends inside a line (cut short): '" + std::string(trim(lines(text).back())) + "'");
  IoErrors e;
  std::map<std::string, std::uint64_t>* cur = nullptr;
  std::string section;
  bool seen = false;
  auto empty_section = [&] { return cur && cur->empty(); };
  auto no_counters = [&] { return err("io_errors: no counters under '" + section + "' (cut short?)"); };
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    if (line.empty()) continue;
    if (line.starts_with("IO errors since ")) {
      if (empty_section()) return no_counters();
      section = std::string(line);
      if (line == "IO errors since filesystem creation") {
        cur = &e.since_creation;
        seen = true;
        continue;
      }
      cur = &e.since_reset;
      auto age = line.substr(16);
      if (age.ends_with(" ago")) age.remove_suffix(4);
      e.reset_age = std::string(trim(age));
      continue;
    }
    auto colon = line.find(':');
    if (!cur || colon == std::string_view::npos) continue;  // e.g. a "Flush errors ..." note line
    auto key = trim(line.substr(0, colon));
    auto n = parse_u64(trim(line.substr(colon + 1)));
    if (!n) return err("io_errors: '" + std::string(key) + "' is '" + std::string(trim(line.substr(colon + 1))) +
                       "', not a number");
    (*cur)[std::string(key)] = *n;
  }
  if (!seen) return err("io_errors: no 'IO errors since filesystem creation' section");
  if (empty_section()) return no_counters();
  return e;
}

Result<Counter> parse_counter(std::string_view text) {
  Counter c;
  int seen = 0;
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = trim(line.substr(0, colon));
    auto val = trim(line.substr(colon + 1));
    std::optional<double> v;
    if (auto n = parse_u64(val)) v = static_cast<double>(*n);
    else if (auto h = parse_human_bytes(val)) v = *h;
    if (!v) return err("counter: '" + std::string(key) + "' value '" + std::string(val) + "' is not a number");
    if (key == "since mount") c.since_mount = *v, ++seen;
    else if (key == "since filesystem creation") c.since_creation = *v, ++seen;
  }
  if (seen == 0) return err("counter: no 'since mount' / 'since filesystem creation' lines");
  return c;
}

std::string parse_state(std::string_view text) {
  auto t = trim(text);
  auto open = t.find('[');
  auto close = t.find(']', open == std::string_view::npos ? 0 : open);
  if (open != std::string_view::npos && close != std::string_view::npos)
    return std::string(t.substr(open + 1, close - open - 1));
  return std::string(t);
}

Result<std::map<std::string, std::uint64_t>> parse_sb_errors(std::string_view text) {
  std::map<std::string, std::uint64_t> out;
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    if (line.empty()) continue;
    std::string_view id, rest;
    if (line.starts_with("(")) {  // "(unknown error 412)  7 ..." : the id has blanks in it
      auto close = line.find(')');
      if (close == std::string_view::npos) return err("errors: '" + std::string(line.substr(0, 80)) + "' has no ')'");
      id = line.substr(0, close + 1);
      rest = line.substr(close + 1);
    } else {
      auto ws = split_ws(line);
      id = ws[0];
      rest = line.substr(static_cast<std::size_t>(ws[0].data() + ws[0].size() - line.data()));
    }
    auto ws = split_ws(rest);
    if (ws.empty()) return err("errors: '" + std::string(line.substr(0, 80)) + "' has no count (cut short?)");
    auto n = parse_u64(ws[0]);
    if (!n) return err("errors: count of '" + std::string(id.substr(0, 80)) + "' is '" + std::string(ws[0].substr(0, 40)) + "', not a number");
    out[std::string(id)] += *n;
  }
  return out;
}

bool error_counter(std::string_view name) {
  for (auto k : {"error", "fail", "retry", "poison", "corrupt", "fsck"})
    if (name.find(k) != std::string_view::npos) return true;
  return false;
}

}  // namespace fsaudit::bcachefs
