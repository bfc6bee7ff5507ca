#include "tests/prometheus/assets.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace fsaudit::testing::prom {

namespace fs = std::filesystem;

fs::path source_dir() { return FSAUDIT_SOURCE_DIR; }
fs::path rules_file() { return source_dir() / "alerts" / "fsaudit.rules.yml"; }
fs::path rule_tests_dir() { return source_dir() / "alerts" / "tests"; }
fs::path dashboards_dir() { return source_dir() / "grafana" / "dashboards"; }

std::vector<AlertRule> load_alert_rules(const fs::path& file) {
  std::vector<AlertRule> out;
  YAML::Node root = YAML::LoadFile(file.string());
  for (const auto& g : root["groups"]) {
    for (const auto& r : g["rules"]) {
      if (!r["alert"]) continue;
      AlertRule a;
      a.group = g["name"].as<std::string>();
      a.name = r["alert"].as<std::string>();
      a.expr = r["expr"].as<std::string>();
      if (r["for"]) a.for_ = r["for"].as<std::string>();
      if (r["labels"] && r["labels"]["severity"]) a.severity = r["labels"]["severity"].as<std::string>();
      if (r["annotations"])
        for (const auto& kv : r["annotations"]) a.annotations[kv.first.as<std::string>()] = kv.second.as<std::string>();
      out.push_back(a);
    }
  }
  return out;
}

namespace {

std::string str(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void collect_panels(const nlohmann::json& panels, Dashboard& d, std::set<int>& ids) {
  for (const auto& p : panels) {
    std::string type = str(p, "type"), title = str(p, "title");
    if (p.contains("id") && p["id"].is_number_integer() && !ids.insert(p["id"].get<int>()).second)
      d.problems.push_back("panel \"" + title + "\": duplicate id " + std::to_string(p["id"].get<int>()));
    if (p.contains("gridPos")) {
      const auto& g = p["gridPos"];
      if (g.value("x", 0) + g.value("w", 0) > 24 || g.value("w", 0) <= 0 || g.value("h", 0) <= 0)
        d.problems.push_back("panel \"" + title + "\": gridPos out of the 24-column grid");
    } else {
      d.problems.push_back("panel \"" + title + "\": no gridPos");
    }
    if (type == "row") {
      if (p.contains("panels")) collect_panels(p["panels"], d, ids);
      continue;
    }
    if (title.empty()) d.problems.push_back("a " + type + " panel has no title");
    if (!p.contains("datasource") || str(p["datasource"], "uid") != "${datasource}")
      d.problems.push_back("panel \"" + title + "\": datasource is not the ${datasource} variable");
    if (!p.contains("targets") || !p["targets"].is_array() || p["targets"].empty()) {
      d.problems.push_back("panel \"" + title + "\": no query");
      continue;
    }
    std::set<std::string> refs;
    for (const auto& t : p["targets"]) {
      PanelQuery q;
      q.dashboard = d.uid;
      q.panel = title;
      q.ref = str(t, "refId");
      q.expr = str(t, "expr");
      q.instant = t.value("instant", false);
      if (q.ref.empty() || !refs.insert(q.ref).second)
        d.problems.push_back("panel \"" + title + "\": missing or duplicate refId");
      if (q.expr.find_first_not_of(" \t\n") == std::string::npos)
        d.problems.push_back("panel \"" + title + "\" " + q.ref + ": empty query");
      if (!t.contains("datasource") || str(t["datasource"], "uid") != "${datasource}")
        d.problems.push_back("panel \"" + title + "\" " + q.ref + ": query datasource is not ${datasource}");
      d.queries.push_back(q);
    }
  }
}

}  // namespace

std::vector<Dashboard> load_dashboards(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Dashboard> out;
  for (const auto& f : files) {
    Dashboard d;
    d.file = f;
    std::ifstream in(f);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      d.problems.push_back(std::string("not valid JSON: ") + e.what());
      out.push_back(d);
      continue;
    }
    d.uid = str(j, "uid");
    d.title = str(j, "title");
    d.schema_version = j.value("schemaVersion", 0);
    if (j.contains("templating") && j["templating"].contains("list")) {
      for (const auto& v : j["templating"]["list"]) {
        Variable var;
        var.dashboard = d.uid;
        var.name = str(v, "name");
        var.type = str(v, "type");
        var.multi = v.value("multi", false);
        var.include_all = v.value("includeAll", false);
        var.all_value = str(v, "allValue");
        if (v.contains("query")) {
          if (v["query"].is_string()) var.query = v["query"].get<std::string>();
          else if (v["query"].is_object()) var.query = str(v["query"], "query");
        }
        if (var.type == "query" && (!v.contains("datasource") || str(v["datasource"], "uid") != "${datasource}"))
          d.problems.push_back("variable " + var.name + ": datasource is not ${datasource}");
        d.variables.push_back(var);
      }
    }
    std::set<int> ids;
    if (j.contains("panels")) collect_panels(j["panels"], d, ids);
    else d.problems.push_back("no panels");
    out.push_back(d);
  }
  return out;
}

namespace {
const std::regex& var_re() {
  // $name, ${name}, ${name:format}; Grafana's built-ins start with $__.
  static const std::regex re(R"(\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*))");
  return re;
}
}  // namespace

std::string substitute(const std::string& expr, const std::map<std::string, std::string>& vars) {
  std::string out;
  auto begin = std::sregex_iterator(expr.begin(), expr.end(), var_re());
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    std::string name = m[1].matched ? m[1].str() : m[2].str();
    out += expr.substr(last, static_cast<size_t>(m.position()) - last);
    auto v = vars.find(name);
    out += v != vars.end() ? v->second : m.str();
    last = static_cast<size_t>(m.position() + m.length());
  }
  out += expr.substr(last);
  return out;
}

std::set<std::string> variables_used(const std::string& expr) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), var_re()); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].matched ? (*it)[1].str() : (*it)[2].str());
  return out;
}

std::set<std::string> metric_names(const std::string& expr) {
  static const std::regex re(R"(\bfsaudit_[a-z0-9_]+)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), re); it != std::sregex_iterator(); ++it)
    out.insert(it->str());
  return out;
}

bool parse_label_values(const std::string& q, std::string& selector, std::string& label) {
  static const std::regex re(R"(^\s*label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$)");
  std::smatch m;
  if (!std::regex_match(q, m, re)) return false;
  selector = m[1].str();
  label = m[2].str();
  return true;
}

const std::map<std::string, std::string>& builtin_variables() {
  static const std::map<std::string, std::string> v = {
      {"__rate_interval", "1m"}, {"__interval", "15s"}, {"__range", "1h"}, {"__range_s", "3600"}};
  return v;
}

}  // namespace fsaudit::testing::prom
