// Sanity of the shipped alert rules, their promtool unit tests and the Grafana dashboards.
// (promtool check/test themselves run as separate ctest entries, see CMakeLists.txt.)
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/prometheus/assets.hpp"

namespace fsaudit::testing::prom {
namespace {

namespace fs = std::filesystem;

TEST(AlertRules, EveryAlertHasSeverityAndOnCallAnnotations) {
  auto rules = load_alert_rules(rules_file());
  ASSERT_GE(rules.size(), 20u) << "the rule set covers at least ~17 distinct alerts";
  std::set<std::string> names;
  for (auto r : rules) {
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate alert name";
    EXPECT_EQ(r.name.rfind("Fsaudit", 0), 0u) << "alert names start with Fsaudit (dashboards count ALERTS{alertname=~\"Fsaudit.*\"})";
    EXPECT_TRUE(r.severity == "critical" || r.severity == "warning") << "severity: " << r.severity;
    EXPECT_GE(r.annotations["summary"].size(), 20u);
    EXPECT_NE(r.annotations["description"].find("Check first"), std::string::npos)
        << "the description must tell the on-call person what to check first";
  }
}

TEST(AlertRules, CanarySeveritiesFollowTheExpectation) {
  std::map<std::string, std::string> sev;
  for (const auto& r : load_alert_rules(rules_file())) sev[r.name] = r.severity;
  EXPECT_EQ(sev["FsauditCanarySilentCorruption"], "critical");
  EXPECT_EQ(sev["FsauditCanaryBlindStack"], "warning");
  EXPECT_EQ(sev["FsauditDown"], "critical");
}

// Each alert needs a promtool case where it fires and one where it must stay silent.
TEST(AlertRules, EveryAlertHasFiringAndSilentUnitTests) {
  std::map<std::string, std::pair<int, int>> cases;  // name -> (firing cases, silent cases)
  int files = 0;
  for (const auto& e : fs::directory_iterator(rule_tests_dir())) {
    if (e.path().filename().string().find(".test.yml") == std::string::npos) continue;
    ++files;
    YAML::Node root = YAML::LoadFile(e.path().string());
    bool loads_rules = false;
    for (const auto& f : root["rule_files"])
      if (f.as<std::string>() == "../fsaudit.rules.yml") loads_rules = true;
    EXPECT_TRUE(loads_rules) << e.path() << " must test ../fsaudit.rules.yml";
    for (const auto& t : root["tests"])
      for (const auto& a : t["alert_rule_test"]) {
        auto& c = cases[a["alertname"].as<std::string>()];
        if (a["exp_alerts"] && a["exp_alerts"].size() > 0) ++c.first;
        else ++c.second;
      }
  }
  ASSERT_GT(files, 0);
  std::set<std::string> known;
  for (const auto& r : load_alert_rules(rules_file())) {
    known.insert(r.name);
    EXPECT_GE(cases[r.name].first, 1) << r.name << ": no promtool case where it fires";
    EXPECT_GE(cases[r.name].second, 1) << r.name << ": no promtool case where it stays silent";
  }
  for (const auto& [name, c] : cases) EXPECT_TRUE(known.count(name)) << "tests an alert that does not exist: " << name;
}

// The id GitHub gives a Markdown heading (what a runbook_url's fragment must name): lower case,
// punctuation other than '-' and '_' dropped, spaces turned into '-'.
std::string github_anchor(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
    else if (c == ' ') out += '-';
    else if (c == '-' || c == '_') out += static_cast<char>(c);
  }
  return out;
}

TEST(Runbooks, GithubAnchor) {
  EXPECT_EQ(github_anchor("FsauditDown"), "fsauditdown");
  EXPECT_EQ(github_anchor("What to do: ZFS (pools)"), "what-to-do-zfs-pools");
  EXPECT_EQ(github_anchor("md_mismatch-sectors"), "md_mismatch-sectors");
}

// Every alert links its own section of docs/runbooks.md, and every alert section belongs to an alert.
TEST(Runbooks, EveryAlertLinksItsRunbookSection) {
  std::ifstream in(source_dir() / "docs" / "runbooks.md");
  ASSERT_TRUE(in) << "docs/runbooks.md missing";
  std::map<std::string, std::string> sections;  // anchor -> body
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      current = github_anchor(line.substr(3));
      EXPECT_FALSE(sections.count(current)) << "duplicate section " << line;
      sections[current];
    } else if (!current.empty()) {
      sections[current] += line + "\n";
    }
  }
  std::set<std::string> linked;
  for (const auto& r : load_alert_rules(rules_file())) {
    SCOPED_TRACE(r.name);
    const std::string& url = r.annotations.at("runbook_url");
    auto hash = url.find('#');
    ASSERT_NE(hash, std::string::npos) << url;
    const std::string doc = "/docs/runbooks.md";
    EXPECT_TRUE(hash >= doc.size() && url.compare(hash - doc.size(), doc.size(), doc) == 0) << url;
    std::string anchor = url.substr(hash + 1);
    EXPECT_EQ(anchor, github_anchor(r.name)) << "the section is titled with the alert's name";
    ASSERT_TRUE(sections.count(anchor)) << "docs/runbooks.md has no section #" << anchor;
    for (const char* part : {"**Means**", "**Confirm**", "**Act**", "**Escalate**"})
      EXPECT_NE(sections[anchor].find(part), std::string::npos) << "section #" << anchor << " lacks " << part;
    linked.insert(anchor);
  }
  for (const auto& [anchor, body] : sections) {
    if (anchor.rfind("fsaudit", 0) == 0) {
      EXPECT_TRUE(linked.count(anchor)) << "section #" << anchor << " has no alert";
    }
  }
}

// One scrape interval (alerts/thresholds.yml scrape_interval_seconds): the Grafana datasource's
// timeInterval says it, and every range the rules rate/increase over spans at least 4 scrapes.
TEST(ScrapeInterval, DatasourceAndRuleWindowsFollowTheThresholdsFile) {
  auto th = YAML::LoadFile((source_dir() / "alerts" / "thresholds.yml").string());
  int scrape = th["scrape_interval_seconds"].as<int>();
  auto ds = YAML::LoadFile((source_dir() / "grafana/provisioning/datasources/fsaudit-prometheus.yml").string());
  EXPECT_EQ(ds["datasources"][0]["jsonData"]["timeInterval"].as<std::string>(), std::to_string(scrape) + "s");
  const std::regex window(R"re((rate|increase)\(\w+(\{[^}]*\})?\[(\d+)([smhd])\]\))re");
  const std::map<std::string, int> unit{{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  int windows = 0;
  for (const auto& r : load_alert_rules(rules_file()))
    for (auto it = std::sregex_iterator(r.expr.begin(), r.expr.end(), window); it != std::sregex_iterator(); ++it) {
      ++windows;
      EXPECT_GE(std::stoi((*it)[3].str()) * unit.at((*it)[4].str()), 4 * scrape) << r.name << ": " << (*it)[0].str();
    }
  EXPECT_GT(windows, 3);
}

// Every panel says what its numbers are: a unit and a description (generate_dashboards.py refuses
// panels without; this checks the committed JSON).
TEST(Dashboards, EveryPanelHasAUnitAndADescription) {
  int panels = 0;
  for (const auto& e : fs::directory_iterator(dashboards_dir())) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    auto d = nlohmann::json::parse(in);
    std::vector<nlohmann::json> todo(d["panels"].begin(), d["panels"].end());
    while (!todo.empty()) {
      auto p = todo.back();
      todo.pop_back();
      if (p.value("type", "") == "row") {
        for (const auto& c : p.value("panels", nlohmann::json::array())) todo.push_back(c);
        continue;
      }
      ++panels;
      std::string where = e.path().filename().string() + " / \"" + p.value("title", "") + "\"";
      EXPECT_FALSE(p.value("description", "").empty()) << where << ": no description";
      EXPECT_FALSE(p["fieldConfig"]["defaults"].value("unit", "").empty()) << where << ": no unit";
    }
  }
  EXPECT_GE(panels, 40);
}

TEST(Dashboards, ThreeDashboardsWithUniqueUids) {
  auto ds = load_dashboards(dashboards_dir());
  std::set<std::string> uids;
  for (const auto& d : ds) {
    EXPECT_FALSE(d.uid.empty()) << d.file;
    EXPECT_TRUE(uids.insert(d.uid).second) << "duplicate uid " << d.uid;
  }
  EXPECT_TRUE(uids.count("fsaudit-fleet"));
  EXPECT_TRUE(uids.count("fsaudit-pool"));
  EXPECT_TRUE(uids.count("fsaudit-capacity"));
}

TEST(Dashboards, EveryPanelHasAQueryOnTheDatasourceVariable) {
  auto ds = load_dashboards(dashboards_dir());
  ASSERT_FALSE(ds.empty());
  for (const auto& d : ds) {
    SCOPED_TRACE(d.file.filename().string());
    EXPECT_GE(d.schema_version, 36) << "use a recent schemaVersion";
    for (const auto& p : d.problems) ADD_FAILURE() << p;
    EXPECT_GE(d.queries.size(), 8u);
  }
}

TEST(Dashboards, VariablesAreDefinedAndUsed) {
  for (const auto& d : load_dashboards(dashboards_dir())) {
    SCOPED_TRACE(d.uid);
    std::map<std::string, const Variable*> vars;
    for (const auto& v : d.variables) vars[v.name] = &v;
    ASSERT_TRUE(vars.count("datasource"));
    EXPECT_EQ(vars["datasource"]->type, "datasource");
    EXPECT_EQ(vars["datasource"]->query, "prometheus");
    ASSERT_TRUE(vars.count("instance"));
    EXPECT_TRUE(vars.count("target") || vars.count("pool"));
    std::set<std::string> used;
    for (const auto& q : d.queries) {
      for (const auto& name : variables_used(q.expr)) {
        used.insert(name);
        EXPECT_TRUE(vars.count(name) || builtin_variables().count(name))
            << q.where() << " uses undefined variable $" << name;
      }
      // Apart from Prometheus's own `up` and `ALERTS`, every query reads fsaudit metrics.
      bool own = q.expr.rfind("sum(up{", 0) == 0 || q.expr.rfind("count(up{", 0) == 0 ||
                 q.expr.find("ALERTS{") != std::string::npos;
      EXPECT_TRUE(own || !metric_names(q.expr).empty()) << q.where() << " queries no fsaudit metric: " << q.expr;
    }
    for (const auto& v : d.variables) {
      if (v.type == "datasource") continue;
      EXPECT_TRUE(used.count(v.name)) << "variable $" << v.name << " is never used";
      std::string sel, label;
      EXPECT_TRUE(parse_label_values(v.query, sel, label)) << v.name << ": " << v.query;
      // Multi-value variables are substituted as regex alternatives: they need =~ and an "All" of .*
      if (v.multi) {
        EXPECT_TRUE(v.include_all);
        EXPECT_EQ(v.all_value, ".*");
        for (const auto& q : d.queries) {
          if (q.expr.find("\"$" + v.name + "\"") != std::string::npos) {
            EXPECT_NE(q.expr.find("=~\"$" + v.name + "\""), std::string::npos) << q.where() << ": use =~ for $" << v.name;
          }
        }
      }
    }
  }
}

TEST(Dashboards, SubstitutionReplacesVariablesOnly) {
  std::map<std::string, std::string> v = {{"instance", ".*"}, {"target", "/srv"}, {"__rate_interval", "1m"}};
  EXPECT_EQ(substitute(R"(rate(x{instance=~"$instance",target=~"${target}"}[$__rate_interval]))", v),
            R"(rate(x{instance=~".*",target=~"/srv"}[1m]))");
  EXPECT_EQ(substitute("a{b=\"$unknown\"}", v), "a{b=\"$unknown\"}");
  EXPECT_EQ(variables_used("x{a=~\"${pool:regex}\"} + $instance"), (std::set<std::string>{"pool", "instance"}));
  std::string sel, label;
  ASSERT_TRUE(parse_label_values(R"(label_values(fsaudit_zfs_pool_state{instance=~"$instance"}, pool))", sel, label));
  EXPECT_EQ(sel, R"(fsaudit_zfs_pool_state{instance=~"$instance"})");
  EXPECT_EQ(label, "pool");
}

// Every fsaudit_* name in the rules and dashboards must be produced somewhere: a string literal in
// daemon/ or probes/ (histograms: the base name). Catches typos and renamed metrics before a lab run.
TEST(AlertRules, RulesAndDashboardsUseOnlyMetricsTheDaemonProduces) {
  std::set<std::string> produced;
  const std::regex lit(R"re("(fsaudit_[a-z0-9_]+)")re");
  for (auto dir : {"daemon", "probes"})
    for (const auto& e : fs::recursive_directory_iterator(source_dir() / dir)) {
      auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      for (auto it = std::sregex_iterator(text.begin(), text.end(), lit); it != std::sregex_iterator(); ++it)
        produced.insert((*it)[1].str());
    }
  ASSERT_GT(produced.size(), 50u);
  auto base = [](std::string m) {
    for (std::string suf : {"_bucket", "_count", "_sum"})
      if (m.size() > suf.size() && m.compare(m.size() - suf.size(), suf.size(), suf) == 0 &&
          m.rfind("fsaudit_fsync_latency_seconds", 0) == 0)
        return m.substr(0, m.size() - suf.size());
    return m;
  };
  for (const auto& r : load_alert_rules(rules_file()))
    for (const auto& m : metric_names(r.expr))
      EXPECT_TRUE(produced.count(base(m))) << "alert " << r.name << " uses " << m << ", which nothing produces";
  for (const auto& d : load_dashboards(dashboards_dir()))
    for (const auto& q : d.queries)
      for (const auto& m : metric_names(q.expr))
        EXPECT_TRUE(produced.count(base(m))) << q.where() << " uses " << m << ", which nothing produces";
}

TEST(Provisioning, FilesParseAndPointAtTheDashboards) {
  auto ds = YAML::LoadFile((source_dir() / "grafana/provisioning/datasources/fsaudit-prometheus.yml").string());
  EXPECT_EQ(ds["datasources"][0]["type"].as<std::string>(), "prometheus");
  auto db = YAML::LoadFile((source_dir() / "grafana/provisioning/dashboards/fsaudit.yml").string());
  EXPECT_EQ(db["providers"][0]["type"].as<std::string>(), "file");
  EXPECT_FALSE(db["providers"][0]["options"]["path"].as<std::string>().empty());
}

}  // namespace
}  // namespace fsaudit::testing::prom
