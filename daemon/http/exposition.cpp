#include "daemon/http/exposition.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace fsaudit::http {
namespace {

bool is_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

std::optional<double> parse_value(std::string_view v) {
  if (v == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (v == "+Inf" || v == "Inf") return std::numeric_limits<double>::infinity();
  if (v == "-Inf") return -std::numeric_limits<double>::infinity();
  if (v.empty()) return std::nullopt;
  std::string s(v);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

}  // namespace

Result<Exposition> parse_exposition(std::string_view text, std::string_view only) {
  Exposition out;
  std::size_t lineno = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineno;
    auto bad = [&](const std::string& what) {
      return err("metrics line " + std::to_string(lineno) + ": " + what);
    };
    if (line.empty() || line[0] == '#') continue;
    if (!only.empty() && !(line.starts_with(only) && line.size() > only.size() &&
                           (line[only.size()] == '{' || line[only.size()] == ' ')))
      continue;
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && is_name_char(line[i], i == 0)) ++i;
    if (i == 0) return bad("expected a metric name");
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        std::size_t k = i;
        while (i < line.size() && is_name_char(line[i], i == k)) ++i;
        if (i == k || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          return bad("expected label=\"value\" in " + s.name);
        std::string key(line.substr(k, i - k));
        i += 2;
        std::string val;
        bool closed = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\' && i < line.size()) {
            char e = line[i++];
            val += e == 'n' ? '\n' : e;
          } else {
            val += c;
          }
        }
        if (!closed) return bad("unterminated label value in " + s.name);
        s.labels[key] = std::move(val);
      }
    }
    while (i < line.size() && line[i] == ' ') ++i;
    auto rest = line.substr(i);
    auto sp = rest.find(' ');
    auto v = parse_value(rest.substr(0, sp));
    if (!v) return bad("bad value for " + s.name);
    s.value = *v;
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::vector<const Sample*> Exposition::find(std::string_view name, const LabelSet& match) const {
  std::vector<const Sample*> r;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        ok = false;
        break;
      }
    }
    if (ok) r.push_back(&s);
  }
  return r;
}

std::optional<double> Exposition::value(std::string_view name, const LabelSet& match) const {
  auto f = find(name, match);
  if (f.empty()) return std::nullopt;
  return f.front()->value;
}

std::optional<std::string> Exposition::state(std::string_view name, const LabelSet& match,
                                             const std::string& state_label) const {
  for (const auto* s : find(name, match))
    if (s->value == 1) return s->label(state_label);
  return std::nullopt;
}

std::string family_text(const TextPieces& pieces, std::string_view family) {
  const std::string head = "# HELP " + std::string(family) + " ";
  std::string text;
  bool in = false;
  for (const auto& p : pieces.parts) {
    if (p->starts_with("# HELP ")) in = p->starts_with(head);
    if (in) text += *p;
  }
  return text;
}

}  // namespace fsaudit::http
