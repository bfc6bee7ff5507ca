#include "daemon/http/status.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "alerts/thresholds.hpp"

namespace fsaudit::http {
namespace {

constexpr double kDay = 86400;

Health worse(Health a, Health b) {
  auto rank = [](Health h) {
    switch (h) {
      case Health::ok: return 0;
      case Health::unknown: return 1;
      case Health::warning: return 2;
      case Health::critical: return 3;
    }
    return 1;
  };
  return rank(a) >= rank(b) ? a : b;
}

std::string num(double v) {
  char buf[64];
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double sum(const Exposition& e, std::string_view name, const LabelSet& m) {
  double s = 0;
  for (const auto* x : e.find(name, m))
    if (std::isfinite(x->value)) s += x->value;
  return s;
}

std::optional<bool> flag(const Exposition& e, std::string_view name, const LabelSet& m) {
  auto v = e.value(name, m);
  if (!v) return std::nullopt;
  return *v != 0;
}

std::string canary_story(const Exposition& e, const CanaryStatus& c) {
  if (c.verdict.empty()) return "no cycle has finished yet";
  LabelSet m{{"target", c.name}};
  std::string s = verdict_meaning(c.verdict);
  std::vector<std::string> facts;
  if (auto v = e.value("fsaudit_canary_copies_found", m)) facts.push_back(num(*v) + " cop" + (*v == 1 ? "y" : "ies") + " of the block found on the raw devices");
  if (auto v = e.value("fsaudit_canary_read_errors_counted", m)) facts.push_back("the read-back raised the error counters by " + num(*v));
  if (auto ran = e.value("fsaudit_canary_scrub_ran", m); ran && *ran == 1) {
    std::string f = "the scrub found " + num(e.value("fsaudit_canary_scrub_errors_found", m).value_or(0)) +
                    " error(s) and repaired " + num(e.value("fsaudit_canary_scrub_errors_repaired", m).value_or(0));
    facts.push_back(f);
  }
  if (auto v = e.value("fsaudit_canary_time_to_detect_seconds", m); v && std::isfinite(*v))
    facts.push_back("detected " + format_duration(*v) + " after the injection");
  if (auto v = e.value("fsaudit_canary_repair_verified", m)) {
    if (*v == 1) facts.push_back("the bad copy was verified rewritten on disk");
    else if (*v == 0) facts.push_back("the bad copy is still bad on disk");
  }
  for (std::size_t i = 0; i < facts.size(); ++i) s += (i == 0 ? ": " : "; ") + facts[i];
  s += ".";
  if (c.expectation_met && !*c.expectation_met) s += " This is not what the canary expects (" + c.expected + ").";
  return s;
}

}  // namespace

std::string to_string(Health h) {
  switch (h) {
    case Health::ok: return "ok";
    case Health::warning: return "warning";
    case Health::critical: return "critical";
    case Health::unknown: return "unknown";
  }
  return "unknown";
}

std::string verdict_meaning(const std::string& v) {
  if (v == "repaired") return "the injected corruption was detected and repaired from a good copy";
  if (v == "detected") return "the injected corruption was detected, but there was no good copy to repair it from";
  if (v == "silent") return "corrupted data was read back without any error: this stack cannot see bit rot";
  if (v == "unverified") return "the cycle could not tell whether the corruption was seen";
  if (v == "not_injectable") return "no copy of the test block could be found on the raw devices to corrupt";
  if (v == "refused") return "the cycle refused to write (a safety check failed)";
  if (v == "error") return "the cycle failed before it could reach a verdict";
  return "verdict " + v;
}

const TargetStatus* Status::target(const std::string& name) const {
  for (const auto& t : targets)
    if (t.name == name) return &t;
  return nullptr;
}

const CanaryStatus* Status::canary(const std::string& name) const {
  for (const auto& c : canaries)
    if (c.name == name) return &c;
  return nullptr;
}

void CapacityTrend::add(const std::string& target, double t, double avail) {
  std::lock_guard l(mu_);
  auto& h = hist_[target];
  if (!h.empty() && t - h.back().first < 30) return;  // one point per 30 s is plenty for a trend
  h.emplace_back(t, avail);
  while (!h.empty() && t - h.front().first > window_) h.erase(h.begin());
}

std::optional<double> CapacityTrend::days_to_full(const std::string& target) const {
  std::lock_guard l(mu_);
  auto it = hist_.find(target);
  if (it == hist_.end() || it->second.size() < 2) return std::nullopt;
  const auto& h = it->second;
  // The alert waits for its for: before it fires; the page says nothing sooner (17 minutes of a
  // cp said "full in 0.26 days" while the alert rightly stayed quiet).
  if (h.back().first - h.front().first < thresholds::capacity_forecast_for_seconds) return std::nullopt;
  double n = static_cast<double>(h.size()), st = 0, sa = 0, stt = 0, sta = 0;
  for (auto [t, a] : h) {
    t -= h.front().first;
    st += t;
    sa += a;
    stt += t * t;
    sta += t * a;
  }
  double den = n * stt - st * st;
  if (den <= 0) return std::nullopt;
  double slope = (n * sta - st * sa) / den;  // bytes per second
  if (slope >= 0) return std::nullopt;
  return h.back().second / -slope / kDay;
}

void CapacityTrend::observe(const Exposition& e, double now) {
  for (const auto* s : e.find(kFamily))
    if (std::isfinite(s->value)) add(s->label("target"), now, s->value);
}

Status build_status(const Exposition& e, double now, const CapacityTrend* trend) {
  Status st;
  st.generated_at = now;
  for (const auto* s : e.find("fsaudit_build_info")) st.version = s->label("version");
  if (auto v = e.value("fsaudit_config_last_reload_success")) st.config_reload_ok = *v == 1;

  std::set<std::string> canary_names;
  for (const auto* s : e.find("fsaudit_canary_info")) canary_names.insert(s->label("target"));
  for (const auto* s : e.find("fsaudit_canary_last_verdict")) canary_names.insert(s->label("target"));
  for (const auto& name : canary_names) {
    CanaryStatus c;
    c.name = name;
    LabelSet m{{"target", name}};
    for (const auto* s : e.find("fsaudit_canary_info", m)) {
      c.fs = s->label("fs");
      c.layout = s->label("layout");
      c.mountpoint = s->label("mountpoint");
    }
    if (auto v = e.state("fsaudit_canary_last_verdict", m, "verdict")) c.verdict = *v;
    for (const auto* s : e.find("fsaudit_canary_expected_verdict_info", m)) c.expected = s->label("expected");
    if (auto v = e.value("fsaudit_canary_expectation_met", m)) c.expectation_met = *v == 1;
    if (auto v = e.value("fsaudit_canary_last_run_timestamp_seconds", m)) c.last_run = *v;
    if (c.fs.empty())
      for (const auto* s : e.find("fsaudit_canary_last_verdict", m)) c.fs = s->label("fs"), c.layout = s->label("layout");
    c.story = canary_story(e, c);
    st.canaries.push_back(std::move(c));
  }

  // Targets: every filesystem the capacity/mount probes report.
  std::map<std::string, TargetStatus> by_name;
  // The mount probe reports an unmounted target as its own failure, so a target with no mount
  // details is still listed (as not mounted) through the mount probe's success series.
  for (const char* n : {"fsaudit_filesystem_info", "fsaudit_filesystem_size_bytes", "fsaudit_probe_success"})
    for (const auto* s : e.find(n)) {
      if (std::string_view(n) == "fsaudit_probe_success" && s->label("probe") != "mount") continue;
      auto& t = by_name[s->label("target")];
      t.name = s->label("target");
      if (t.fs.empty()) t.fs = s->label("fs");
      if (t.device.empty()) t.device = s->label("device");
    }
  by_name.erase("");
  for (const auto& c : canary_names) by_name.erase(c);

  std::vector<ProbeIssue> issues;
  for (const auto* s : e.find("fsaudit_probe_success")) {
    LabelSet m{{"probe", s->label("probe")}, {"target", s->label("target")}};
    bool stuck = e.value("fsaudit_probe_stuck", m).value_or(0) == 1;
    if (s->value == 1 && !stuck) continue;
    ProbeIssue p{s->label("probe"), s->label("target"), "", stuck};
    for (const auto* f : e.find("fsaudit_probe_failure_info", m)) p.reason = f->label("reason");
    if (stuck && p.reason.empty()) p.reason = "stuck past its timeout (e.g. statfs on a dead mount)";
    issues.push_back(std::move(p));
  }

  for (auto& entry : by_name) {
    const auto& name = entry.first;
    auto& t = entry.second;  // a reference, not a binding: the lambda below captures it (clang 14)
    LabelSet m{{"target", name}};
    Health h = Health::ok;
    auto problem = [&](Health level, std::string why) {
      h = worse(h, level);
      t.problems.push_back(std::move(why));
    };
    // The mount probe fails with "not mounted: ..." when the mount point is not in the mount table.
    if (auto ok = e.value("fsaudit_probe_success", {{"probe", "mount"}, {"target", name}})) {
      std::string reason;
      for (const auto* f : e.find("fsaudit_probe_failure_info", {{"probe", "mount"}, {"target", name}})) reason = f->label("reason");
      if (*ok == 1) t.mounted = true;
      else if (reason.rfind("not mounted", 0) == 0) t.mounted = false;
    }
    t.readonly = flag(e, "fsaudit_filesystem_readonly", m);
    t.data_checksums = flag(e, "fsaudit_filesystem_data_checksums", m);
    t.size_bytes = e.value("fsaudit_filesystem_size_bytes", m);
    t.avail_bytes = e.value("fsaudit_filesystem_avail_bytes", m);
    if (trend) t.days_to_full = trend->days_to_full(name);
    if (t.mounted && !*t.mounted) problem(Health::critical, "not mounted");
    if (t.readonly && *t.readonly) problem(Health::warning, "mounted read-only");
    if (t.size_bytes && t.avail_bytes && *t.size_bytes > 0) {
      double free_ratio = *t.avail_bytes / *t.size_bytes;
      if (free_ratio < thresholds::capacity_almost_full_avail_ratio)
        problem(Health::critical, "only " + num(free_ratio * 100) + "% space left");
      // FsauditFilesystemFullIn7Days: a warning, and only for a filesystem already below the fill level.
      if (t.days_to_full && *t.days_to_full < thresholds::capacity_forecast_days &&
          free_ratio < thresholds::capacity_forecast_max_avail_ratio)
        problem(Health::warning, "full in " + num(*t.days_to_full) + " days at the current rate");
    }

    if (double v = sum(e, "fsaudit_ext4_errors", m); v > 0) problem(Health::critical, "ext4 recorded " + num(v) + " error(s) in its superblock");
    if (e.value("fsaudit_xfs_shutdown", m).value_or(0) == 1) problem(Health::critical, "XFS has shut down");
    if (double v = sum(e, "fsaudit_xfs_unhealthy_metadata", m); v > 0) problem(Health::warning, "XFS marked " + num(v) + " metadata structure(s) unhealthy");
    if (double v = sum(e, "fsaudit_btrfs_device_errors", m); v > 0) problem(Health::critical, "btrfs device error counters total " + num(v));
    if (double v = sum(e, "fsaudit_btrfs_devices_missing", m); v > 0) problem(Health::critical, num(v) + " btrfs device(s) missing");
    if (double v = sum(e, "fsaudit_bcachefs_device_errors", m); v > 0) problem(Health::critical, "bcachefs device error counters total " + num(v));
    std::string pool;
    if (t.fs == "zfs") {
      pool = t.device.substr(0, t.device.find('/'));
      LabelSet pm{{"pool", pool}};
      if (auto s = e.state("fsaudit_zfs_pool_state", pm); s && *s != "online") problem(Health::critical, "pool " + pool + " is " + *s);
      if (double v = e.value("fsaudit_zfs_pool_data_errors", pm).value_or(0); v > 0) problem(Health::critical, "pool " + pool + " has " + num(v) + " data error(s)");
      if (double v = sum(e, "fsaudit_zfs_pool_errors", pm); v > 0) problem(Health::warning, "pool " + pool + " error counters total " + num(v));
    }

    // Scrubs are labelled by mount point, pool or md device.
    for (const std::string& key : {name, pool}) {
      if (key.empty() || t.scrub) continue;
      LabelSet sm{{"target", key}};
      if (e.find("fsaudit_scrub_observe_success", sm).empty() && e.find("fsaudit_scrub_last_completed_age_seconds", sm).empty())
        continue;
      ScrubStatus sc;
      sc.age_seconds = e.value("fsaudit_scrub_last_completed_age_seconds", sm);
      sc.running = e.value("fsaudit_scrub_running", sm).value_or(0) == 1;
      sc.paused = e.value("fsaudit_scrub_paused", sm).value_or(0) == 1;
      sc.progress_ratio = e.value("fsaudit_scrub_progress_ratio", sm);
      for (const auto* s : e.find("fsaudit_scrub_last_errors", sm)) sc.errors[s->label("kind")] = s->value;
      for (const auto* s : e.find("fsaudit_scrub_last_result_info", sm)) sc.last_result = s->label("result");
      for (const auto* s : e.find("fsaudit_scrub_mode_info", sm)) sc.mode = s->label("mode");
      for (const auto* s : e.find("fsaudit_scrub_decision_info", sm)) sc.decision = s->label("code");
      if (sc.errors["uncorrectable"] > 0) problem(Health::critical, "the last scrub found " + num(sc.errors["uncorrectable"]) + " uncorrectable error(s)");
      else if (sc.errors["found"] > 0) problem(Health::warning, "the last scrub found " + num(sc.errors["found"]) + " error(s)");
      if (sc.errors["uncorrectable"] == 0) sc.errors.erase("uncorrectable");
      if (sc.errors["found"] == 0 && !e.value("fsaudit_scrub_last_errors", {{"target", key}, {"kind", "found"}})) sc.errors.erase("found");
      if (sc.age_seconds && !std::isfinite(*sc.age_seconds) && sc.mode != "unsupported") problem(Health::warning, "never scrubbed");
      else if (sc.age_seconds && *sc.age_seconds > thresholds::scrub_overdue_days * kDay) problem(Health::warning, "last scrub " + format_duration(*sc.age_seconds) + " ago");
      t.scrub = sc;
    }

    t.fsync_p50_seconds = e.value("fsaudit_fsync_latency_window_seconds", {{"target", name}, {"percentile", "50"}});
    t.fsync_p99_seconds = e.value("fsaudit_fsync_latency_window_seconds", {{"target", name}, {"percentile", "99"}});
    t.fsync_p999_seconds = e.value("fsaudit_fsync_latency_window_seconds", {{"target", name}, {"percentile", "99.9"}});
    if (t.fsync_p99_seconds && *t.fsync_p99_seconds > thresholds::fsync_p99_slow_seconds) problem(Health::warning, "fsync p99 is " + format_duration(*t.fsync_p99_seconds));

    for (const auto* s : e.find("fsaudit_setup_finding", m)) {
      if (s->value != 1) continue;
      t.setup_findings.push_back({s->label("rule"), s->label("severity")});
      std::string sev = s->label("severity");
      problem(sev == "critical" ? Health::critical : sev == "info" ? Health::ok : Health::warning, "setup: " + s->label("rule"));
    }
    for (const auto& c : st.canaries)
      if (c.fs == t.fs) t.canaries.push_back(c.name);

    for (const auto& p : issues)
      if (p.target == name) {
        t.probe_issues.push_back(p);
        problem(p.stuck ? Health::critical : Health::warning, "probe " + p.probe + (p.stuck ? " is stuck: " : " failed: ") + p.reason);
      }
    if (!t.mounted && !t.size_bytes) h = worse(h, Health::unknown);
    t.health = h;
    st.targets.push_back(std::move(t));
  }
  for (const auto& p : issues)
    if (!by_name.count(p.target) && !canary_names.count(p.target)) st.host_issues.push_back(p);

  Health overall = st.targets.empty() && st.canaries.empty() ? Health::unknown : Health::ok;
  std::map<Health, int> counts;
  for (const auto& t : st.targets) {
    overall = worse(overall, t.health);
    ++counts[t.health];
  }
  for (const auto& c : st.canaries)
    if ((c.expectation_met && !*c.expectation_met) || c.verdict == "error" || c.verdict == "refused") overall = worse(overall, Health::warning);
  if (!st.host_issues.empty()) overall = worse(overall, Health::warning);
  if (st.config_reload_ok && !*st.config_reload_ok) overall = worse(overall, Health::warning);
  st.overall = overall;
  st.summary = std::to_string(st.targets.size()) + " filesystem(s)";
  std::string parts;
  for (Health h : {Health::ok, Health::warning, Health::critical, Health::unknown})
    if (counts[h]) parts += (parts.empty() ? "" : ", ") + std::to_string(counts[h]) + " " + to_string(h);
  if (!parts.empty()) st.summary += ": " + parts;
  st.summary += "; " + std::to_string(st.canaries.size()) + " canar" + (st.canaries.size() == 1 ? "y" : "ies");
  if (!st.host_issues.empty()) st.summary += "; " + std::to_string(st.host_issues.size()) + " host probe(s) failing";
  return st;
}

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  if (!v) return nullptr;
  if (std::isinf(*v)) return *v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(*v)) return nullptr;
  return *v;
}
nlohmann::json opt(const std::optional<bool>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json issue_json(const ProbeIssue& p) {
  return {{"probe", p.probe}, {"target", p.target}, {"reason", p.reason}, {"stuck", p.stuck}};
}

}  // namespace

nlohmann::json to_json(const CanaryStatus& c) {
  return {{"name", c.name},         {"fs", c.fs},         {"layout", c.layout},
          {"mountpoint", c.mountpoint}, {"verdict", c.verdict.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.verdict)},
          {"expected", c.expected}, {"expectation_met", opt(c.expectation_met)},
          {"last_run", opt(c.last_run)}, {"story", c.story}};
}

nlohmann::json to_json(const TargetStatus& t) {
  nlohmann::json j{{"name", t.name},
                   {"fs", t.fs},
                   {"device", t.device},
                   {"health", to_string(t.health)},
                   {"problems", t.problems},
                   {"mounted", opt(t.mounted)},
                   {"readonly", opt(t.readonly)},
                   {"data_checksums", opt(t.data_checksums)},
                   {"size_bytes", opt(t.size_bytes)},
                   {"avail_bytes", opt(t.avail_bytes)},
                   {"used_ratio", t.size_bytes && t.avail_bytes && *t.size_bytes > 0
                                      ? nlohmann::json(1 - *t.avail_bytes / *t.size_bytes)
                                      : nlohmann::json(nullptr)},
                   {"days_to_full", opt(t.days_to_full)},
                   {"canaries", t.canaries},
                   {"fsync_seconds", {{"p50", opt(t.fsync_p50_seconds)}, {"p99", opt(t.fsync_p99_seconds)}, {"p999", opt(t.fsync_p999_seconds)}}}};
  if (t.scrub) {
    const auto& s = *t.scrub;
    j["scrub"] = {{"age_seconds", opt(s.age_seconds)}, {"running", s.running}, {"paused", s.paused},
                  {"progress_ratio", opt(s.progress_ratio)}, {"errors", s.errors}, {"last_result", s.last_result},
                  {"mode", s.mode}, {"decision", s.decision}};
  } else {
    j["scrub"] = nullptr;
  }
  j["setup_findings"] = nlohmann::json::array();
  for (const auto& f : t.setup_findings) j["setup_findings"].push_back({{"rule", f.rule}, {"severity", f.severity}});
  j["probe_issues"] = nlohmann::json::array();
  for (const auto& p : t.probe_issues) j["probe_issues"].push_back(issue_json(p));
  return j;
}

nlohmann::json to_json(const Status& s) {
  nlohmann::json j{{"schema", "fsaudit.status/v1"},
                   {"generated_at", s.generated_at},
                   {"version", s.version},
                   {"overall", to_string(s.overall)},
                   {"summary", s.summary},
                   {"config_reload_ok", opt(s.config_reload_ok)}};
  j["targets"] = nlohmann::json::array();
  for (const auto& t : s.targets) j["targets"].push_back(to_json(t));
  j["canaries"] = nlohmann::json::array();
  for (const auto& c : s.canaries) j["canaries"].push_back(to_json(c));
  j["host_issues"] = nlohmann::json::array();
  for (const auto& p : s.host_issues) j["host_issues"].push_back(issue_json(p));
  return j;
}

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string utc(double t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string verdict_span(const CanaryStatus& c) {
  std::string v = c.verdict.empty() ? "pending" : c.verdict;
  return "<span class=\"verdict v-" + esc(v) + "\" data-verdict=\"" + esc(v) + "\">" + esc(v) + "</span>";
}

}  // namespace

std::string render_html(const Status& s, int refresh_seconds) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(refresh_seconds) + "\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>fsaudit: " + esc(to_string(s.overall)) + "</title>\n<style>\n"
       "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}\n"
       "h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.1em;margin-top:1.5em}\n"
       "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #ddd;vertical-align:top}\n"
       "th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}\n"
       ".h-ok{color:#1b7a1b;font-weight:bold}.h-warning{color:#9a6700;font-weight:bold}.h-critical{color:#fff;background:#c62828;font-weight:bold;padding:0 .3em}.h-unknown{color:#666;font-weight:bold}\n"
       ".verdict{font-weight:bold}.v-repaired{color:#1b7a1b}.v-detected{color:#9a6700}.v-silent{color:#d00000}.v-error,.v-refused{color:#d00000}.v-pending,.v-unverified,.v-not_injectable{color:#666}\n"
       ".story{font-size:.85em;color:#444;max-width:40em}.problems{margin:.2em 0 0 1em;padding:0;font-size:.85em}\n"
       ".muted{color:#666}footer{margin-top:2em;font-size:.8em;color:#666}\n"
       "</style></head><body>\n";
  h += "<h1>fsaudit on this host: <span id=\"overall\" class=\"h-" + esc(to_string(s.overall)) + "\">" +
       esc(to_string(s.overall)) + "</span></h1>\n";
  h += "<p id=\"summary\">" + esc(s.summary) + ". Updated " + esc(utc(s.generated_at)) + "; this page reloads every " +
       std::to_string(refresh_seconds) + " s.</p>\n";
  if (s.config_reload_ok && !*s.config_reload_ok)
    h += "<p class=\"h-warning\">The last configuration reload was rejected; the previous configuration is running.</p>\n";

  h += "<h2>Filesystems</h2>\n<table id=\"targets\"><thead><tr><th>Filesystem</th><th>Health</th><th class=\"num\">Capacity</th>"
       "<th class=\"num\">Days to full</th><th>Canary</th><th>Scrub</th><th class=\"num\">fsync p99</th></tr></thead><tbody>\n";
  if (s.targets.empty()) h += "<tr><td colspan=\"7\" class=\"muted\">No filesystem reported yet.</td></tr>\n";
  for (const auto& t : s.targets) {
    h += "<tr data-target=\"" + esc(t.name) + "\"><td><b>" + esc(t.name) + "</b><br><span class=\"muted\">" + esc(t.fs) +
         (t.device.empty() ? "" : " on " + esc(t.device)) + "</span></td>";
    h += "<td><span class=\"health h-" + esc(to_string(t.health)) + "\">" + esc(to_string(t.health)) + "</span>";
    if (!t.problems.empty()) {
      h += "<ul class=\"problems\">";
      for (const auto& p : t.problems) h += "<li>" + esc(p) + "</li>";
      h += "</ul>";
    }
    h += "</td><td class=\"num\">";
    if (t.size_bytes && t.avail_bytes && *t.size_bytes > 0)
      h += esc(num(std::round((1 - *t.avail_bytes / *t.size_bytes) * 100))) + "% used<br><span class=\"muted\">" +
           esc(format_bytes(*t.avail_bytes)) + " free of " + esc(format_bytes(*t.size_bytes)) + "</span>";
    else h += "<span class=\"muted\">n/a</span>";
    h += "</td><td class=\"num\">" + (t.days_to_full ? esc(num(std::round(*t.days_to_full))) : std::string("<span class=\"muted\">not filling</span>")) + "</td><td>";
    if (t.canaries.empty()) h += "<span class=\"muted\">no canary for " + esc(t.fs) + "</span>";
    for (const auto& name : t.canaries)
      if (const auto* c = s.canary(name)) h += verdict_span(*c) + " <span class=\"muted\">(" + esc(c->name) + ")</span><br>";
    h += "</td><td>";
    if (!t.scrub) {
      h += "<span class=\"muted\">n/a</span>";
    } else {
      const auto& sc = *t.scrub;
      if (sc.running) h += "running" + (sc.progress_ratio ? " " + num(std::round(*sc.progress_ratio * 100)) + "%" : std::string()) + "<br>";
      else if (sc.paused) h += "paused<br>";
      h += sc.age_seconds ? (std::isfinite(*sc.age_seconds) ? esc(format_duration(*sc.age_seconds)) + " ago" : std::string("never"))
                          : std::string("<span class=\"muted\">unknown</span>");
      std::string f;
      for (const auto& [k, v] : sc.errors) f += (f.empty() ? "" : ", ") + num(v) + " " + k;
      h += "<br><span class=\"muted\">" + (f.empty() ? std::string("no findings") : "findings: " + esc(f)) + "</span>";
    }
    h += "</td><td class=\"num\">" + (t.fsync_p99_seconds ? esc(format_duration(*t.fsync_p99_seconds)) : std::string("<span class=\"muted\">n/a</span>")) +
         "</td></tr>\n";
  }
  h += "</tbody></table>\n";

  h += "<h2>Canaries</h2>\n<table id=\"canaries\"><thead><tr><th>Canary</th><th>Stack</th><th>Last verdict</th><th>Expected</th>"
       "<th>Last run</th><th>Story</th></tr></thead><tbody>\n";
  if (s.canaries.empty()) h += "<tr><td colspan=\"6\" class=\"muted\">No canary configured.</td></tr>\n";
  for (const auto& c : s.canaries) {
    h += "<tr data-canary=\"" + esc(c.name) + "\"><td><b>" + esc(c.name) + "</b></td><td>" + esc(c.fs) +
         (c.layout.empty() ? "" : " " + esc(c.layout)) + "</td><td>" + verdict_span(c) + "</td><td>" + esc(c.expected) +
         (c.expectation_met ? (*c.expectation_met ? " (met)" : " <b class=\"h-warning\">(not met)</b>") : std::string()) +
         "</td><td>" + (c.last_run ? esc(format_duration(s.generated_at - *c.last_run)) + " ago" : std::string("never")) +
         "</td><td class=\"story\">" + esc(c.story) + "</td></tr>\n";
  }
  h += "</tbody></table>\n";
  if (!s.host_issues.empty()) {
    h += "<h2>Host-wide probes failing</h2>\n<ul id=\"host-issues\">";
    for (const auto& p : s.host_issues) h += "<li><b>" + esc(p.probe) + "</b>: " + esc(p.reason) + "</li>";
    h += "</ul>\n";
  }
  h += "<footer>fsauditd " + esc(s.version) +
       " &middot; <a href=\"/metrics\">metrics</a> &middot; <a href=\"/api/v1/status\">status as JSON</a></footer>\n</body></html>\n";
  return h;
}

}  // namespace fsaudit::http
