#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

namespace {

std::optional<double> size_value(std::string_view s) {
  if (s == "-" || s.empty()) return std::nullopt;
  if (auto u = parse_u64(s)) return static_cast<double>(*u);
  auto h = parse_human_bytes(s);
  if (!h) return std::nullopt;
  return std::round(*h);  // "91.5M" is approximate anyway: whole bytes
}

// "44%", "44" (-p), "-" -> 0.44
std::optional<double> percent(std::string_view s) {
  if (s.ends_with('%')) s.remove_suffix(1);
  if (s == "-" || s.empty()) return std::nullopt;
  auto d = parse_double(s);
  if (!d) return std::nullopt;
  return *d / 100.0;
}

std::optional<double> ratio_x(std::string_view s) {
  if (s.ends_with('x')) s.remove_suffix(1);
  if (s == "-" || s.empty()) return std::nullopt;
  return parse_double(s);
}

void set_field(ZfsPoolList& row, const std::string& c, std::string_view v) {
  if (c == "name") row.name = std::string(v);
  else if (c == "size") row.size_bytes = size_value(v);
  else if (c == "allocated" || c == "alloc") row.allocated_bytes = size_value(v);
  else if (c == "free") row.free_bytes = size_value(v);
  else if (c == "fragmentation" || c == "frag") row.fragmentation_ratio = percent(v);
  else if (c == "capacity" || c == "cap") row.capacity_ratio = percent(v);
  else if (c == "dedupratio" || c == "dedup") row.dedup_ratio = ratio_x(v);
  else if (c == "health") row.health = std::string(v);
}

ZfsPoolList& row_for(std::vector<ZfsPoolList>& out, std::string_view name) {
  for (auto& r : out)
    if (r.name == name) return r;
  out.emplace_back();
  out.back().name = std::string(name);
  return out.back();
}

}  // namespace

Result<std::vector<ZfsPoolList>> parse_zpool_get(std::string_view text) {
  std::vector<ZfsPoolList> out;
  std::size_t lineno = 0;
  for (auto line : lines(text)) {
    ++lineno;
    if (trim(line).empty()) continue;
    auto f = split(line, '\t');
    if (f.size() != 4) return err("zpool get line " + std::to_string(lineno) + ": expected NAME<TAB>PROPERTY<TAB>VALUE<TAB>SOURCE");
    set_field(row_for(out, f[0]), to_lower(f[1]), trim(f[2]));
  }
  return out;
}

Result<std::vector<ZfsPoolList>> parse_zpool_get_json(std::string_view text) {
  auto doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return err("zpool get -j: output is not a JSON object");
  std::vector<ZfsPoolList> out;
  auto pools = doc.find("pools");
  if (pools == doc.end() || !pools->is_object()) return out;
  for (auto& [name, pj] : pools->items()) {
    auto& row = row_for(out, pj.contains("name") && pj["name"].is_string() ? pj["name"].get<std::string>() : name);
    auto props = pj.find("properties");
    if (props == pj.end() || !props->is_object()) continue;
    for (auto& [prop, pv] : props->items()) {
      auto v = pv.is_object() ? pv.find("value") : pv.end();
      if (v == pv.end()) continue;
      std::string value = v->is_string() ? v->get<std::string>() : v->dump();
      if (prop != "name") set_field(row, prop, value);
    }
  }
  return out;
}

// `columns` empty: the text starts with zpool list's own header line (no -H), as with -v.
Result<std::vector<ZfsPoolList>> parse_zpool_list(std::string_view text, std::string_view columns) {
  std::vector<std::string> cols;
  for (auto c : split(columns, ',')) cols.push_back(to_lower(trim(c)));
  const bool from_header = trim(columns).empty();
  if (from_header) cols.clear();
  std::vector<ZfsPoolList> out;
  std::size_t lineno = 0;
  for (auto raw : lines(text)) {
    ++lineno;
    auto line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    if (from_header) {
      if (cols.empty()) {  // "NAME SIZE ALLOC FREE ... HEALTH ALTROOT"
        for (auto h : split_ws(line)) cols.push_back(to_lower(h));
        if (cols.empty() || cols[0] != "name") return err("zpool list: no NAME header line");
        continue;
      }
      if (line[0] == ' ' || line[0] == '\t') continue;  // -v: indented vdev rows
      auto f = split_ws(line);
      if (f.size() <= cols.size() &&
          std::all_of(f.begin() + 1, f.end(), [](std::string_view x) { return x == "-"; }))
        continue;  // -v: "logs" / "cache" section rows carry no values
    }
    // -H separates fields with one tab; fall back to blanks for hand-typed samples.
    auto f = split(line, '\t');
    if (f.size() != cols.size()) f = split_ws(line);
    if (f.size() != cols.size())
      return err("zpool list line " + std::to_string(lineno) + ": " + std::to_string(f.size()) +
                 " fields, expected " + std::to_string(cols.size()) + " (" + std::string(columns) + ")");
    ZfsPoolList row;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      set_field(row, cols[i], trim(f[i]));
    }
    if (row.name.empty()) return err("zpool list line " + std::to_string(lineno) + ": no pool name");
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace fsaudit::zfs
