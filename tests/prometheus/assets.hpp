#pragma once
// Reads fsaudit's shipped Prometheus/Grafana assets (alerts/fsaudit.rules.yml, grafana/dashboards/*.json)
// for the asset sanity test and the end-to-end lab test.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fsaudit::testing::prom {

std::filesystem::path source_dir();
std::filesystem::path rules_file();
std::filesystem::path rule_tests_dir();
std::filesystem::path dashboards_dir();

struct AlertRule {
  std::string group, name, expr, severity, for_;
  std::map<std::string, std::string> annotations;
};
std::vector<AlertRule> load_alert_rules(const std::filesystem::path& file);

struct PanelQuery {
  std::string dashboard;  // uid
  std::string panel;      // title
  std::string ref;        // refId
  std::string expr;
  bool instant = false;
  std::string where() const { return dashboard + " / \"" + panel + "\" / " + ref; }
};

struct Variable {
  std::string dashboard, name, type, query;  // query: label_values(...) for type "query"
  bool multi = false, include_all = false;
  std::string all_value;
};

struct Dashboard {
  std::filesystem::path file;
  std::string uid, title;
  int schema_version = 0;
  std::vector<PanelQuery> queries;
  std::vector<Variable> variables;
  std::vector<std::string> problems;  // structural problems found while loading
};
std::vector<Dashboard> load_dashboards(const std::filesystem::path& dir);

// Replaces $name / ${name} / ${name:...} by vars[name]; unknown variables are left in place.
std::string substitute(const std::string& expr, const std::map<std::string, std::string>& vars);
// Variable names ($x, ${x}) used in an expression.
std::set<std::string> variables_used(const std::string& expr);
// fsaudit_* metric names used in an expression (as written: ..._bucket stays).
std::set<std::string> metric_names(const std::string& expr);

// label_values(SELECTOR, LABEL) -> {SELECTOR, LABEL}; false if the query has another form.
bool parse_label_values(const std::string& q, std::string& selector, std::string& label);

// Grafana's built-in interval/range variables, with values for a short lab run.
const std::map<std::string, std::string>& builtin_variables();

}  // namespace fsaudit::testing::prom
