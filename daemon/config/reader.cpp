#include "daemon/config/reader.hpp"

#include <limits>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::config {

Section::Section(YAML::Node node, std::string path, std::shared_ptr<const std::string> file)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {
  if (node_ && !node_.IsNull() && !node_.IsMap())
    fail_at(node_, "", "expected a mapping of keys (key: value), found " +
                           std::string(node_.IsSequence() ? "a list" : "a single value"));
}

std::string Section::key_path(const std::string& key) const {
  if (path_.empty()) return key;
  if (key.empty()) return path_;
  return path_ + "." + key;
}

std::string Section::where(const YAML::Node& n) const {
  if (!n.IsDefined()) return *file_;
  auto m = n.Mark();
  if (m.is_null()) return *file_;
  return *file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

void Section::fail_at(const YAML::Node& n, const std::string& key, const std::string& message) const {
  std::string kp = key_path(key);
  throw ConfigError(where(n) + ": " + (kp.empty() ? "" : "key '" + kp + "': ") + message);
}

void Section::fail(const std::string& key, const std::string& message) const {
  // Point at the key's value if it is present, else at the section (or just the file).
  if (node_.IsDefined() && node_.IsMap() && !key.empty())
    for (auto it = node_.begin(); it != node_.end(); ++it)
      if (it->first.Scalar() == key) fail_at(it->second, key, message);
  fail_at(node_, key, message);
}

YAML::Node Section::get(const std::string& key) {
  asked_.insert(key);
  if (!node_ || !node_.IsMap()) return YAML::Node();
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (it->first.Scalar() == key) return it->second;
  return YAML::Node();
}

bool Section::has(const std::string& key) {
  auto n = get(key);
  return n && n.IsDefined() && !n.IsNull();
}

std::string Section::scalar(const std::string& key, const YAML::Node& n, const std::string& expected) {
  if (!n.IsScalar()) fail_at(n, key, "expected " + expected + ", found " + (n.IsMap() ? "a mapping" : "a list"));
  return n.Scalar();
}

std::string Section::string(const std::string& key, const std::string& def) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  return scalar(key, n, "a string");
}

bool Section::boolean(const std::string& key, bool def) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  std::string s = to_lower(scalar(key, n, "true or false"));
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail_at(n, key, "expected true or false, found \"" + n.Scalar() + "\"");
}

std::int64_t Section::integer(const std::string& key, std::int64_t def, std::int64_t min, std::int64_t max) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  auto s = scalar(key, n, "a whole number");
  auto v = parse_i64(trim(s));
  if (!v) fail_at(n, key, "expected a whole number, found \"" + s + "\"");
  if (*v < min || *v > max)
    fail_at(n, key, std::to_string(*v) + " is out of range; use a value from " + std::to_string(min) + " to " +
                        std::to_string(max));
  return *v;
}

double Section::number(const std::string& key, double def, double min, double max) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  auto s = scalar(key, n, "a number");
  auto v = parse_double(trim(s));
  if (!v) fail_at(n, key, "expected a number, found \"" + s + "\"");
  if (*v < min || *v > max)
    fail_at(n, key, s + " is out of range; use a value from " + std::to_string(min) + " to " + std::to_string(max));
  return *v;
}

std::chrono::milliseconds Section::duration(const std::string& key, std::chrono::milliseconds def,
                                            std::chrono::milliseconds min, std::chrono::milliseconds max) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  auto s = scalar(key, n, "a duration such as 30s, 5m, 6h or 7d");
  auto v = parse_duration(s);
  if (!v) fail_at(n, key, v.error());
  if (*v < min || *v > max)
    fail_at(n, key, "duration " + s + " is out of range; use a value from " + format_duration(min) + " to " +
                        format_duration(max));
  return *v;
}

std::uint64_t Section::size(const std::string& key, std::uint64_t def, std::uint64_t min, std::uint64_t max) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  auto s = scalar(key, n, "a size such as 64MiB");
  auto v = parse_size(s);
  if (!v) fail_at(n, key, v.error());
  if (*v < min || *v > max)
    fail_at(n, key, "size " + s + " is out of range; use a value from " + std::to_string(min) + " to " +
                        std::to_string(max) + " bytes");
  return *v;
}

std::string Section::choice(const std::string& key, const std::string& def, const std::vector<std::string>& choices) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  auto s = scalar(key, n, "one of the listed values");
  for (const auto& c : choices)
    if (c == s) return s;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  fail_at(n, key, "\"" + s + "\" is not allowed; use one of: " + list);
}

std::vector<std::string> Section::strings(const std::string& key, const std::vector<std::string>& def) {
  auto n = get(key);
  if (!n || n.IsNull()) return def;
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence()) fail_at(n, key, "expected a list of strings");
  std::vector<std::string> out;
  for (const auto& e : n) {
    if (!e.IsScalar()) fail_at(e, key, "expected a list of strings; this entry is not a string");
    out.push_back(e.Scalar());
  }
  return out;
}

std::map<std::string, std::string> Section::string_map(const std::string& key) {
  auto n = get(key);
  std::map<std::string, std::string> out;
  if (!n || n.IsNull()) return out;
  if (!n.IsMap()) fail_at(n, key, "expected a mapping of name: value");
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->second.IsScalar()) fail_at(it->second, key + "." + it->first.Scalar(), "expected a string");
    out[it->first.Scalar()] = it->second.Scalar();
  }
  return out;
}

Section Section::section(const std::string& key) {
  auto n = get(key);
  return Section(n && !n.IsNull() ? n : YAML::Node(), key_path(key), file_);
}

std::vector<Section> Section::list(const std::string& key) {
  auto n = get(key);
  std::vector<Section> out;
  if (!n || n.IsNull()) return out;
  if (!n.IsSequence()) fail_at(n, key, "expected a list (entries starting with '- ')");
  for (std::size_t i = 0; i < n.size(); ++i)
    out.emplace_back(n[i], key_path(key) + "[" + std::to_string(i) + "]", file_);
  return out;
}

std::vector<std::pair<std::string, Section>> Section::named_sections(const std::string& key,
                                                                     const std::vector<std::string>& allowed) {
  auto n = get(key);
  std::vector<std::pair<std::string, Section>> out;
  if (!n || n.IsNull()) return out;
  if (!n.IsMap()) fail_at(n, key, "expected a mapping of names to settings");
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string name = it->first.Scalar();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == name;
    if (!ok) {
      std::string best;
      std::size_t bd = std::numeric_limits<std::size_t>::max();
      for (const auto& a : allowed)
        if (auto d = edit_distance(name, a); d < bd) bd = d, best = a;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail_at(it->first, key + "." + name,
              "unknown name" + (bd <= 3 ? " (did you mean '" + best + "'?)" : std::string()) + "; known: " + list);
    }
    out.emplace_back(name, Section(it->second, key_path(key) + "." + name, file_));
  }
  return out;
}

void Section::finish() {
  if (!node_ || !node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.Scalar();
    if (asked_.count(k)) continue;
    std::string best;
    std::size_t bd = std::numeric_limits<std::size_t>::max();
    for (const auto& a : asked_)
      if (auto d = edit_distance(k, a); d < bd) bd = d, best = a;
    std::string hint = bd <= std::max<std::size_t>(2, k.size() / 3) ? " (did you mean '" + best + "'?)" : "";
    std::string known;
    for (const auto& a : asked_) known += (known.empty() ? "" : ", ") + a;
    fail_at(it->first, k, "unknown key" + hint + "; remove it or use one of: " + known);
  }
}

Section open_document(const std::string& yaml_text, const std::string& file_label) {
  auto file = std::make_shared<const std::string>(file_label);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(file_label + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
  return Section(root, "", file);
}

}  // namespace fsaudit::config
