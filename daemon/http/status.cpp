#include "daemon/http/status.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include "alerts/thresholds.hpp"
#include "daemon/core/fstype.hpp"

namespace fsaudit::http {
namespace {

constexpr double kDay = 86400;

int rank(Health h) {
  switch (h) {
    case Health::ok: return 0;
    case Health::unknown: return 1;
    case Health::warning: return 2;
    case Health::critical: return 3;
  }
  return 1;
}

Health worse(Health a, Health b) { return rank(a) >= rank(b) ? a : b; }

Health health_of(metrics::Severity s) {
  switch (s) {
    case metrics::Severity::info: return Health::ok;
    case metrics::Severity::warning: return Health::warning;
    case metrics::Severity::critical: return Health::critical;
  }
  return Health::warning;
}

std::string num(double v) {
  char buf[64];
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

template <class T>
void take(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

// One filesystem's facts from every probe, joined.
void merge(TargetStatus& t, const metrics::FsFacts& f) {
  if (t.fs.empty()) t.fs = f.fs;
  if (t.device.empty()) t.device = f.source;
  take(t.mounted, f.mounted);
  take(t.readonly, f.readonly);
  take(t.data_checksums, f.data_checksums);
  take(t.size_bytes, f.size_bytes);
  take(t.avail_bytes, f.avail_bytes);
  take(t.files, f.files);
  take(t.files_free, f.files_free);
  take(t.fsync_p50_seconds, f.fsync_p50_seconds);
  take(t.fsync_p99_seconds, f.fsync_p99_seconds);
  take(t.fsync_p999_seconds, f.fsync_p999_seconds);
  take(t.detection_covered, f.detection_covered);
  if (!f.covering_canary.empty()) t.covering_canary = f.covering_canary;
  if (f.scrub && !t.scrub) t.scrub = *f.scrub;
  if (f.redundancy && !t.redundancy) t.redundancy = *f.redundancy;
  take(t.members_at_risk, f.members_at_risk);
  t.setup_findings.insert(t.setup_findings.end(), f.setup_findings.begin(), f.setup_findings.end());
  for (const auto& p : f.problems)
    if (p.severity != metrics::Severity::info)
      t.problems.push_back({health_of(p.severity), p.words, runbook_url(p.runbook), t.name});
}

// What ZFS pool or kernel device the filesystem sits on, to join the host-wide probes' facts.
std::string pool_of(const TargetStatus& t) {
  return fstype::is_zfs(t.fs) ? t.device.substr(0, t.device.find('/')) : std::string();
}
std::string device_of(const TargetStatus& t) {
  return t.device.starts_with("/dev/") ? t.device.substr(t.device.rfind('/') + 1) : std::string();
}

// The rules whose numbers the alert rules share (alerts/thresholds.yml): same fill levels, the
// same history before a forecast is believed.
void threshold_problems(TargetStatus& t) {
  auto problem = [&](Health h, std::string words, const char* alert) {
    t.problems.push_back({h, std::move(words), runbook_url(alert), t.name});
  };
  if (t.size_bytes && t.avail_bytes && *t.size_bytes > 0) {
    double free_ratio = *t.avail_bytes / *t.size_bytes;
    if (free_ratio < thresholds::capacity_almost_full_avail_ratio)
      problem(Health::critical, "only " + num(std::round(free_ratio * 1000) / 10) + "% space left (" +
                                    format_bytes(*t.avail_bytes) + ")",
              "FsauditFilesystemAlmostFull");
    // FsauditFilesystemFullIn7Days: a warning, and only for a filesystem already below the fill level.
    else if (t.days_to_full && *t.days_to_full < thresholds::capacity_forecast_days &&
             free_ratio < thresholds::capacity_forecast_max_avail_ratio)
      problem(Health::warning, "full in " + num(std::round(*t.days_to_full * 10) / 10) + " days at the current rate",
              "FsauditFilesystemFullIn7Days");
  }
  if (t.files && t.files_free && *t.files > 0 && *t.files_free / *t.files < thresholds::inodes_almost_full_avail_ratio)
    problem(Health::critical, "only " + num(*t.files_free) + " inodes left of " + num(*t.files), "FsauditInodesAlmostFull");
  if (t.scrub) {
    const auto& sc = *t.scrub;
    if (sc.age_seconds && !std::isfinite(*sc.age_seconds) && sc.mode != "unsupported")
      problem(Health::warning, "never scrubbed", "FsauditScrubOverdue");
    else if (sc.age_seconds && *sc.age_seconds > thresholds::scrub_overdue_days * kDay)
      problem(Health::warning, "last scrub " + format_duration(*sc.age_seconds) + " ago", "FsauditScrubOverdue");
  }
  if (const auto& r = t.redundancy; r && r->margin && *r->margin == 0 && r->designed && *r->designed > 0) {
    std::string down;
    for (const auto& m : r->members_down) down += (down.empty() ? "" : ", ") + m;
    problem(Health::critical, "survives no further member failure" + (down.empty() ? std::string() : " (down: " + down + ")"),
            "FsauditNoRedundancyLeft");
  }
  if (t.members_at_risk && *t.members_at_risk > 0 && t.redundancy && t.redundancy->margin &&
      *t.redundancy->margin <= thresholds::member_at_risk_margin_max)
    problem(Health::warning, num(*t.members_at_risk) + " disk(s) under it may fail soon by their SMART data",
            "FsauditMemberAtRiskLowMargin");
  if (t.fsync_p99_seconds && *t.fsync_p99_seconds > thresholds::fsync_p99_slow_seconds)
    problem(Health::warning, "fsync p99 is " + format_duration(*t.fsync_p99_seconds), "FsauditFsyncLatencyHigh");
}

void judge_protection(TargetStatus& t) {
  bool setup_warns = std::any_of(t.setup_findings.begin(), t.setup_findings.end(),
                                 [](const SetupFinding& f) { return f.severity != "info"; });
  if (t.health == Health::critical) {
    t.protection = Protection::broken;
    t.protection_reason = t.problems.empty() ? "critical" : t.problems.front().text;
  } else if (t.data_checksums && !*t.data_checksums) {
    t.protection = Protection::exposed;
    t.protection_reason = "no data checksums: corrupted data would be read back without an error";
  } else if (!t.data_checksums) {
    t.protection = Protection::exposed;
    t.protection_reason = "not known yet whether its data is checksummed";
  } else if (!t.detection_covered || !*t.detection_covered) {
    t.protection = Protection::exposed;
    t.protection_reason = "checksummed, but no canary on the same kind of stack has proven lately that corruption is caught";
  } else if (setup_warns) {
    t.protection = Protection::exposed;
    t.protection_reason = "checksummed and proven by canary " + t.covering_canary + ", but its setup has a finding (below)";
  } else {
    t.protection = Protection::protected_;
    t.protection_reason = "checksummed, and canary " + t.covering_canary + " proved lately that corruption on this kind of stack is caught";
  }
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

std::string to_string(Protection p) {
  switch (p) {
    case Protection::protected_: return "protected";
    case Protection::exposed: return "exposed";
    case Protection::broken: return "broken";
  }
  return "exposed";
}

std::string runbook_url(const std::string& alert) {
  if (alert.empty()) return "";
  std::string anchor;
  for (char c : alert) anchor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "https://github.com/fsaudit/fsaudit/blob/main/docs/runbooks.md#" + anchor;
}

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
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
  if (!h.buckets.empty() && t - h.last_t < 30) return;  // one point per 30 s is plenty for a trend
  const double len = window_ / kBuckets;
  const auto index = static_cast<std::int32_t>(std::floor(t / len));
  if (h.buckets.empty()) h.first_t = t;
  if (h.buckets.empty() || h.buckets.back().index != index) {
    if (h.buckets.size() == h.buckets.capacity())
      h.buckets.reserve(std::min<std::size_t>(std::max<std::size_t>(2 * h.buckets.size(), 1), kBuckets + 1));
    h.buckets.push_back({index, 0, 0, 0, 0, 0});
    // Whole buckets that ended before the window: what is left spans the window at least.
    while (h.buckets.size() > 1 && h.buckets[1].index * len <= t - window_) {
      h.buckets.erase(h.buckets.begin());
      h.first_t = std::max(h.first_t, h.buckets.front().index * len);
    }
  }
  auto& b = h.buckets.back();
  const double x = t - b.index * len;
  const double n = b.n + 1.0;
  const double dx = x - b.mean_x;
  const double mean_x = b.mean_x + dx / n;
  const double mean_a = b.mean_a + (avail - b.mean_a) / n;
  b.sxx = static_cast<float>(b.sxx + dx * (x - mean_x));
  b.sxa += dx * (avail - mean_a);
  b.mean_x = static_cast<float>(mean_x);
  b.mean_a = mean_a;
  b.n += 1;
  h.last_t = t;
  h.last_avail = avail;
}

std::optional<double> CapacityTrend::days_to_full(const std::string& target) const {
  std::lock_guard l(mu_);
  auto it = hist_.find(target);
  if (it == hist_.end() || it->second.buckets.empty()) return std::nullopt;
  const auto& h = it->second;
  const double len = window_ / kBuckets;
  // The alert waits for its for: before it fires; the page says nothing sooner (17 minutes of a
  // cp said "full in 0.26 days" while the alert rightly stayed quiet).
  if (h.last_t - h.first_t < thresholds::capacity_forecast_for_seconds) return std::nullopt;
  // The buckets' moments combined: x counted from the oldest bucket's start, the overall means first,
  // then each bucket's centred sums plus its mean's distance from the overall mean.
  const double origin = h.buckets.front().index * len;
  auto bucket_mean_x = [&](const Bucket& b) { return b.index * len - origin + b.mean_x; };
  double n = 0, mx = 0, ma = 0;
  for (const auto& b : h.buckets) {
    n += b.n;
    mx += b.n * bucket_mean_x(b);
    ma += b.n * b.mean_a;
  }
  if (n < 2) return std::nullopt;
  mx /= n;
  ma /= n;
  double sxx = 0, sxa = 0;
  for (const auto& b : h.buckets) {
    const double d = bucket_mean_x(b) - mx;
    sxx += b.sxx + b.n * d * d;
    sxa += b.sxa + b.n * d * (b.mean_a - ma);
  }
  if (sxx <= 0) return std::nullopt;
  const double slope = sxa / sxx;  // bytes per second
  if (slope >= 0) return std::nullopt;
  return h.last_avail / -slope / kDay;
}

void CapacityTrend::observe(const StatusItemsByKey& items, double now) {
  for (const auto& [key, it] : items) observe(it, now);
  expire(now);
}

void CapacityTrend::observe(const metrics::StatusItems& items, double now) {
  for (const auto& f : items.filesystems)
    if (!f.target.empty() && f.avail_bytes && std::isfinite(*f.avail_bytes)) add(f.target, now, *f.avail_bytes);
}

void CapacityTrend::expire(double now) {
  std::lock_guard l(mu_);
  std::erase_if(hist_, [&](const auto& kv) { return now - kv.second.last_t > window_; });
}

std::size_t CapacityTrend::targets() const {
  std::lock_guard l(mu_);
  return hist_.size();
}

namespace {

// The canaries the items name: listed on the page, never counted as production targets.
struct Canaries {
  std::set<std::string> names, mounts;
  bool has(const std::string& t) const { return names.count(t) || mounts.count(t); }
};

Canaries collect_canaries(const StatusItemsByKey& items, Status& st) {
  Canaries c;
  for (const auto& [key, it] : items) {
    if (!it.version.empty()) st.version = it.version;
    if (it.config_reload_ok) st.config_reload_ok = it.config_reload_ok;
    for (const auto& can : it.canaries) {
      st.canaries.push_back(can);
      c.names.insert(can.name);
      if (!can.mountpoint.empty()) c.mounts.insert(can.mountpoint);
    }
  }
  std::sort(st.canaries.begin(), st.canaries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return c;
}

// What the items say, sorted by whom it is about.
struct Gathered {
  std::map<std::string, TargetStatus> by_name;  // every filesystem a per-target probe spoke of or failed on
  std::vector<const metrics::FsFacts*> host_wide;  // facts named by pool or device
  std::vector<ProbeIssue> issues;                  // failed or stuck runs
};

Gathered gather(const StatusItemsByKey& items, const Canaries& canaries) {
  Gathered g;
  for (const auto& [key, it] : items) {
    for (const auto& f : it.filesystems) {
      if (f.target.empty()) g.host_wide.push_back(&f);
      else if (f.target != "host" && !canaries.has(f.target)) g.by_name[f.target].name = f.target;
    }
    for (const auto& r : it.runs) {
      if (!r.host_wide && !canaries.has(r.target) && r.target != "host") g.by_name[r.target].name = r.target;
      if (r.ok && !r.stuck) continue;
      ProbeIssue p{r.probe, r.target, r.reason, r.stuck};
      if (p.stuck && p.reason.empty()) p.reason = "stuck past its timeout (e.g. statfs on a dead mount)";
      g.issues.push_back(std::move(p));
    }
  }
  for (const auto& [key, it] : items)
    for (const auto& f : it.filesystems)
      if (auto t = g.by_name.find(f.target); t != g.by_name.end()) merge(t->second, f);
  return g;
}

// Kernel errors go to their filesystem; those on no watched filesystem are the host's.
void place_kernel_errors(const StatusItemsByKey& items, const Canaries& canaries, Gathered& g, Status& st) {
  for (const auto& [key, it] : items)
    for (const auto& k : it.kernel_errors) {
      if (canaries.has(k.target)) continue;
      st.kernel_errors.push_back(k);
      if (auto t = g.by_name.find(k.target); t != g.by_name.end()) t->second.kernel_errors.push_back(k);
      else if (k.target.empty())
        st.host_problems.push_back({k.last_hour > 0 ? Health::critical : Health::warning,
                                    "the kernel logged " + num(k.last_day) + " storage error(s) on " +
                                        (k.device.empty() ? std::string("an unnamed device") : k.device) +
                                        " in the last day (" + num(k.last_hour) + " in the last hour)",
                                    runbook_url("FsauditKernelStorageErrors"), ""});
    }
}

ProblemStatus probe_problem(const ProbeIssue& p, const std::string& target) {
  return {p.stuck ? Health::critical : Health::warning, "probe " + p.probe + (p.stuck ? " is stuck: " : " failed: ") + p.reason,
          runbook_url(p.stuck ? "FsauditProbeStuck" : "FsauditProbeFailing"), target};
}

// One filesystem's page entry: its pool's or device's facts joined in, the alert rules' thresholds,
// its canaries and failing probes, then its health and protection.
void finish_target(TargetStatus& t, const Gathered& g, const std::vector<CanaryStatus>& canaries, const CapacityTrend* trend,
                   std::set<const metrics::FsFacts*>& joined) {
  const std::string pool = pool_of(t), device = device_of(t);
  for (const auto* f : g.host_wide)
    if ((!f->pool.empty() && f->pool == pool) || (!f->device.empty() && f->device == device)) {
      merge(t, *f);
      joined.insert(f);
    }
  if (trend) t.days_to_full = trend->days_to_full(t.name);
  threshold_problems(t);
  for (const auto& c : canaries)
    if (c.fs == t.fs) t.canaries.push_back(c.name);
  for (const auto& p : g.issues) {
    if (p.target != t.name) continue;
    t.probe_issues.push_back(p);
    // A probe whose own facts already say why (the mount probe's "not mounted") is not repeated.
    bool said = std::any_of(t.problems.begin(), t.problems.end(), [&](const auto& x) { return x.text == p.reason; });
    if (!said) t.problems.push_back(probe_problem(p, t.name));
  }
  std::stable_sort(t.problems.begin(), t.problems.end(),
                   [](const auto& a, const auto& b) { return rank(a.severity) > rank(b.severity); });
  Health h = Health::ok;
  for (const auto& p : t.problems) h = worse(h, p.severity);
  if (!t.mounted && !t.size_bytes) h = worse(h, Health::unknown);
  t.health = h;
  judge_protection(t);
}

// What is wrong with no single filesystem: unjoined pool or device facts, host-wide probes, missed
// canary expectations, a rejected reload.
void host_problems(const Gathered& g, const std::set<const metrics::FsFacts*>& joined, const Canaries& canaries, Status& st) {
  for (const auto* f : g.host_wide)
    if (!joined.count(f))
      for (const auto& p : f->problems)
        if (p.severity != metrics::Severity::info) st.host_problems.push_back({health_of(p.severity), p.words, runbook_url(p.runbook), ""});
  for (const auto& p : g.issues)
    if (!g.by_name.count(p.target) && !canaries.has(p.target)) {
      st.host_issues.push_back(p);
      st.host_problems.push_back(probe_problem(p, ""));
    }
  for (const auto& c : st.canaries)
    if (c.expectation_met && !*c.expectation_met)
      st.host_problems.push_back({Health::warning, "canary " + c.name + " did not reach its expected verdict (" + c.expected + "): " + c.story,
                                  runbook_url("FsauditCanaryExpectationMissed"), ""});
  if (st.config_reload_ok && !*st.config_reload_ok)
    st.host_problems.push_back({Health::warning, "the last configuration reload was rejected; the previous configuration is running",
                                runbook_url("FsauditConfigReloadFailed"), ""});
}

// The overall health, the counts and the first problem to show.
void summarize(Status& st) {
  Health overall = st.targets.empty() && st.canaries.empty() ? Health::unknown : Health::ok;
  auto consider = [&](const ProblemStatus& p) {
    if (!st.first || rank(p.severity) > rank(st.first->severity)) st.first = p;
  };
  for (const auto& t : st.targets) {
    overall = worse(overall, t.health);
    (t.protection == Protection::protected_ ? st.protected_count
     : t.protection == Protection::broken   ? st.broken_count
                                            : st.exposed_count)++;
    for (const auto& p : t.problems) consider(p);
  }
  for (const auto& p : st.host_problems) {
    overall = worse(overall, p.severity);
    consider(p);
  }
  st.overall = overall;
  st.summary = std::to_string(st.targets.size()) + " filesystem(s): " + std::to_string(st.protected_count) + " protected, " +
               std::to_string(st.exposed_count) + " exposed, " + std::to_string(st.broken_count) + " broken; " +
               std::to_string(st.canaries.size()) + " canar" + (st.canaries.size() == 1 ? "y" : "ies");
  if (!st.host_issues.empty()) st.summary += "; " + std::to_string(st.host_issues.size()) + " host probe(s) failing";
}

}  // namespace

Status build_status(const StatusItemsByKey& items, double now, const CapacityTrend* trend, const std::string& host) {
  Status st;
  st.generated_at = now;
  st.host = host;
  const Canaries canaries = collect_canaries(items, st);
  Gathered g = gather(items, canaries);
  place_kernel_errors(items, canaries, g, st);
  std::set<const metrics::FsFacts*> joined;
  for (auto& [name, t] : g.by_name) {
    finish_target(t, g, st.canaries, trend, joined);
    st.targets.push_back(std::move(t));
  }
  host_problems(g, joined, canaries, st);
  summarize(st);
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
nlohmann::json problem_json(const ProblemStatus& p) {
  return {{"severity", to_string(p.severity)}, {"text", p.text}, {"runbook_url", p.runbook_url}, {"target", p.target}};
}
nlohmann::json kernel_json(const KernelErrors& k) {
  return {{"device", k.device}, {"target", k.target}, {"last_hour", k.last_hour}, {"last_day", k.last_day}};
}

}  // namespace

nlohmann::json to_json(const CanaryStatus& c) {
  return {{"name", c.name},         {"fs", c.fs},         {"layout", c.layout},
          {"mountpoint", c.mountpoint}, {"verdict", c.verdict.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.verdict)},
          {"expected", c.expected}, {"expectation_met", opt(c.expectation_met)},
          {"last_run", opt(c.last_run)}, {"meaning", c.meaning}, {"story", c.story}};
}

nlohmann::json to_json(const TargetStatus& t) {
  nlohmann::json problems = nlohmann::json::array(), details = nlohmann::json::array();
  for (const auto& p : t.problems) {
    problems.push_back(p.text);
    details.push_back(problem_json(p));
  }
  nlohmann::json j{{"name", t.name},
                   {"fs", t.fs},
                   {"device", t.device},
                   {"health", to_string(t.health)},
                   {"problems", problems},
                   {"problem_details", details},
                   {"protection", to_string(t.protection)},
                   {"protection_reason", t.protection_reason},
                   {"mounted", opt(t.mounted)},
                   {"readonly", opt(t.readonly)},
                   {"data_checksums", opt(t.data_checksums)},
                   {"detection_covered", opt(t.detection_covered)},
                   {"size_bytes", opt(t.size_bytes)},
                   {"avail_bytes", opt(t.avail_bytes)},
                   {"used_ratio", t.size_bytes && t.avail_bytes && *t.size_bytes > 0
                                      ? nlohmann::json(1 - *t.avail_bytes / *t.size_bytes)
                                      : nlohmann::json(nullptr)},
                   {"inodes", {{"total", opt(t.files)}, {"free", opt(t.files_free)}}},
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
  j["kernel_errors"] = nlohmann::json::array();
  for (const auto& k : t.kernel_errors) j["kernel_errors"].push_back(kernel_json(k));
  if (t.redundancy) {
    auto opt_int = [](const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    j["redundancy"] = {{"margin", opt_int(t.redundancy->margin)}, {"designed", opt_int(t.redundancy->designed)},
                       {"members_down", t.redundancy->members_down}, {"members_at_risk", opt(t.members_at_risk)}};
  } else {
    j["redundancy"] = {{"margin", nullptr}, {"designed", nullptr}, {"members_down", nlohmann::json::array()},
                       {"members_at_risk", opt(t.members_at_risk)}};
  }
  return j;
}

nlohmann::json to_json(const Status& s) {
  nlohmann::json j{{"schema", "fsaudit.status/v1"},
                   {"generated_at", s.generated_at},
                   {"version", s.version},
                   {"host", s.host},
                   {"overall", to_string(s.overall)},
                   {"summary", s.summary},
                   {"protection", {{"protected", s.protected_count}, {"exposed", s.exposed_count}, {"broken", s.broken_count}}},
                   {"first", s.first ? problem_json(*s.first) : nlohmann::json(nullptr)},
                   {"config_reload_ok", opt(s.config_reload_ok)}};
  j["targets"] = nlohmann::json::array();
  for (const auto& t : s.targets) j["targets"].push_back(to_json(t));
  j["canaries"] = nlohmann::json::array();
  for (const auto& c : s.canaries) j["canaries"].push_back(to_json(c));
  j["host_issues"] = nlohmann::json::array();
  for (const auto& p : s.host_issues) j["host_issues"].push_back(issue_json(p));
  j["host_problems"] = nlohmann::json::array();
  for (const auto& p : s.host_problems) j["host_problems"].push_back(problem_json(p));
  j["kernel_errors"] = nlohmann::json::array();
  for (const auto& k : s.kernel_errors) j["kernel_errors"].push_back(kernel_json(k));
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

std::string muted(const std::string& s) { return "<span class=\"muted\">" + esc(s) + "</span>"; }

std::string problem_html(const ProblemStatus& p) {
  std::string h = "<span class=\"sev s-" + esc(to_string(p.severity)) + "\">" + esc(to_string(p.severity)) + "</span> " + esc(p.text);
  if (!p.runbook_url.empty()) h += " <a href=\"" + esc(p.runbook_url) + "\">runbook</a>";
  return h;
}

// A cell: its column name rides along in data-label, shown before the value once the table is
// collapsed into cards on a narrow screen.
std::string td(const char* label, const std::string& html, const char* cls = "") {
  return std::string("<td data-label=\"") + label + "\"" + (*cls ? std::string(" class=\"") + cls + "\"" : "") + ">" + html + "</td>";
}

std::string capacity_html(std::optional<double> size, std::optional<double> avail, bool bytes) {
  if (!size || !avail || *size <= 0) return muted("n/a");
  auto f = [&](double v) { return bytes ? format_bytes(v) : num(v); };
  return esc(num(std::round((1 - *avail / *size) * 100))) + "% used<br>" + muted(f(*avail) + " free of " + f(*size));
}

std::string scrub_html(const std::optional<ScrubStatus>& s) {
  if (!s) return muted("n/a");
  const auto& sc = *s;
  std::string h;
  if (sc.running) h += "running" + (sc.progress_ratio ? " " + num(std::round(*sc.progress_ratio * 100)) + "%" : std::string()) + "<br>";
  else if (sc.paused) h += "paused<br>";
  h += sc.age_seconds ? (std::isfinite(*sc.age_seconds) ? esc(format_duration(*sc.age_seconds)) + " ago" : std::string("never"))
                      : muted("unknown");
  std::string f;
  for (const auto& [k, v] : sc.errors) f += (f.empty() ? "" : ", ") + num(v) + " " + k;
  return h + "<br>" + muted(f.empty() ? std::string("no findings") : "findings: " + f);
}

// "survives 1 more failure", "none left (down: loop1 OFFLINE)", "none by design", and the disks at risk.
std::string redundancy_html(const TargetStatus& t) {
  std::string h;
  if (const auto& r = t.redundancy; r && r->margin) {
    if (*r->margin > 0) {
      h = "survives " + esc(num(*r->margin)) + " more member failure" + (*r->margin == 1 ? "" : "s");
    } else if (r->designed && *r->designed > 0) {
      h = "<b class=\"h-critical\">none left</b>";
    } else {
      h = muted("none by design");
    }
    if (!r->members_down.empty()) {
      std::string down;
      for (const auto& m : r->members_down) down += (down.empty() ? "" : ", ") + m;
      h += "<br>" + muted("down: " + down);
    }
  } else {
    h = muted("n/a");
  }
  if (t.members_at_risk && *t.members_at_risk > 0)
    h += "<br><b class=\"h-warning\">" + esc(num(*t.members_at_risk)) + " disk(s) at risk</b>";
  return h;
}

std::string kernel_html(const std::vector<KernelErrors>& ks) {
  if (ks.empty()) return muted("none in the last day");
  std::string h;
  for (const auto& k : ks)
    h += esc(k.device.empty() ? std::string("?") : k.device) + ": " + esc(num(k.last_hour)) + " in the last hour, " +
         esc(num(k.last_day)) + " in the last day<br>";
  return h;
}

}  // namespace

std::string render_html(const Status& s, int refresh_seconds) {
  const std::string host = s.host.empty() ? std::string("this host") : s.host;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(refresh_seconds) + "\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>fsaudit " + esc(host) + ": " + esc(to_string(s.overall)) + "</title>\n<style>\n"
       "body{font-family:system-ui,sans-serif;margin:1em;color:#222;background:#fff;overflow-wrap:anywhere}\n"
       "h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.1em;margin-top:1.5em}\n"
       "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #ddd;vertical-align:top}\n"
       "th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}\n"
       ".h-ok{color:#1b7a1b;font-weight:bold}.h-warning{color:#9a6700;font-weight:bold}.h-critical{color:#fff;background:#c62828;font-weight:bold;padding:0 .3em}.h-unknown{color:#666;font-weight:bold}\n"
       ".sev{font-size:.8em;font-weight:bold;text-transform:uppercase}.s-critical{color:#c62828}.s-warning{color:#9a6700}\n"
       ".p-protected{color:#1b7a1b;font-weight:bold}.p-exposed{color:#9a6700;font-weight:bold}.p-broken{color:#c62828;font-weight:bold}\n"
       ".verdict{font-weight:bold}.v-repaired{color:#1b7a1b}.v-detected{color:#9a6700}.v-silent{color:#d00000}.v-error,.v-refused{color:#d00000}.v-pending,.v-unverified,.v-not_injectable{color:#666}\n"
       ".story{font-size:.85em;color:#444;max-width:40em}.problems{margin:.2em 0 0 1em;padding:0;font-size:.85em}\n"
       "#first{border-left:.3em solid #c62828;padding:.3em .6em;background:#fbeaea}#first.none{border-color:#1b7a1b;background:#eef7ee}\n"
       ".muted{color:#666}footer{margin-top:2em;font-size:.8em;color:#666}\n"
       // Narrow screens: every table row becomes a card, each cell a line with its column name.
       "@media (max-width:800px){table,thead,tbody,tr,th,td{display:block;width:auto}thead{display:none}"
       "tr{border:1px solid #ddd;margin:0 0 .8em;padding:.3em 0}td{border:none;padding:.2em .6em;text-align:left}"
       "td[data-label]::before{content:attr(data-label) \": \";font-weight:bold;color:#444}.num{text-align:left}}\n"
       "</style></head><body>\n";
  h += "<h1>fsaudit on <span id=\"host\">" + esc(host) + "</span>: <span id=\"overall\" class=\"h-" + esc(to_string(s.overall)) + "\">" +
       esc(to_string(s.overall)) + "</span></h1>\n";
  h += "<p id=\"protection\"><b>" + std::to_string(s.targets.size()) + " filesystem(s): <span class=\"p-protected\">" +
       std::to_string(s.protected_count) + " protected</span>, <span class=\"p-exposed\">" + std::to_string(s.exposed_count) +
       " exposed</span>, <span class=\"p-broken\">" + std::to_string(s.broken_count) + " broken</span>.</b> " +
       muted("Protected: data is checksummed and a canary proved lately that corruption on that kind of stack is caught.") + "</p>\n";
  if (s.first)
    h += "<p id=\"first\"><b>What to do first:</b> " + (s.first->target.empty() ? std::string() : "<b>" + esc(s.first->target) + "</b>: ") +
         problem_html(*s.first) + "</p>\n";
  else
    h += "<p id=\"first\" class=\"none\"><b>Nothing to do:</b> no problem found.</p>\n";
  h += "<p id=\"summary\">" + esc(s.summary) + ". Updated " + esc(utc(s.generated_at)) + "; this page reloads every " +
       std::to_string(refresh_seconds) + " s.</p>\n";

  h += "<h2>Filesystems</h2>\n<table id=\"targets\"><thead><tr><th>Filesystem</th><th>Health</th><th>Protection</th>"
       "<th class=\"num\">Capacity</th><th class=\"num\">Inodes</th><th class=\"num\">Days to full</th><th>Canary</th><th>Scrub</th>"
       "<th>Redundancy</th><th class=\"num\">fsync p99</th><th>Kernel errors</th></tr></thead><tbody>\n";
  if (s.targets.empty()) h += "<tr><td colspan=\"11\" class=\"muted\">No filesystem reported yet.</td></tr>\n";
  for (const auto& t : s.targets) {
    h += "<tr data-target=\"" + esc(t.name) + "\">";
    std::string name = "<b>" + esc(t.name) + "</b><br>" + muted(t.fs + (t.device.empty() ? "" : " on " + t.device));
    if (t.mounted && !*t.mounted) name += "<br><b class=\"h-critical\">not mounted</b>";
    h += td("Filesystem", name);
    std::string health = "<span class=\"health h-" + esc(to_string(t.health)) + "\">" + esc(to_string(t.health)) + "</span>";
    if (!t.problems.empty()) {
      health += "<ul class=\"problems\">";
      for (const auto& p : t.problems) health += "<li>" + problem_html(p) + "</li>";
      health += "</ul>";
    }
    h += td("Health", health);
    h += td("Protection", "<span class=\"p-" + esc(to_string(t.protection)) + "\">" + esc(to_string(t.protection)) + "</span><br>" +
                              muted(t.protection_reason));
    h += td("Capacity", capacity_html(t.size_bytes, t.avail_bytes, true), "num");
    h += td("Inodes", capacity_html(t.files, t.files_free, false), "num");
    h += td("Days to full", t.days_to_full ? esc(num(std::round(*t.days_to_full))) : muted("not filling"), "num");
    std::string can;
    if (t.canaries.empty()) can = muted("no canary for " + t.fs);
    for (const auto& name : t.canaries)
      if (const auto* c = s.canary(name)) can += verdict_span(*c) + " " + muted("(" + c->name + ")") + "<br>";
    h += td("Canary", can);
    h += td("Scrub", scrub_html(t.scrub));
    h += td("Redundancy", redundancy_html(t));
    h += td("fsync p99", t.fsync_p99_seconds ? esc(format_duration(*t.fsync_p99_seconds)) : muted("n/a"), "num");
    h += td("Kernel errors", kernel_html(t.kernel_errors));
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";

  h += "<h2>Canaries</h2>\n<table id=\"canaries\"><thead><tr><th>Canary</th><th>Stack</th><th>Last verdict</th><th>Expected</th>"
       "<th>Last run</th><th>Story</th></tr></thead><tbody>\n";
  if (s.canaries.empty()) h += "<tr><td colspan=\"6\" class=\"muted\">No canary configured.</td></tr>\n";
  for (const auto& c : s.canaries) {
    h += "<tr data-canary=\"" + esc(c.name) + "\">" + td("Canary", "<b>" + esc(c.name) + "</b>") +
         td("Stack", esc(c.fs) + (c.layout.empty() ? "" : " " + esc(c.layout))) + td("Last verdict", verdict_span(c)) +
         td("Expected", esc(c.expected) + (c.expectation_met ? (*c.expectation_met ? " (met)" : " <b class=\"h-warning\">(not met)</b>") : std::string())) +
         td("Last run", c.last_run ? esc(format_duration(s.generated_at - *c.last_run)) + " ago" : std::string("never")) +
         td("Story", esc(c.story), "story") + "</tr>\n";
  }
  h += "</tbody></table>\n";

  h += "<h2>Kernel storage errors</h2>\n<table id=\"kernel-errors\"><thead><tr><th>Device</th><th>Filesystem</th>"
       "<th class=\"num\">Last hour</th><th class=\"num\">Last day</th></tr></thead><tbody>\n";
  if (s.kernel_errors.empty()) h += "<tr><td colspan=\"4\" class=\"muted\">None in the last day.</td></tr>\n";
  for (const auto& k : s.kernel_errors)
    h += "<tr data-device=\"" + esc(k.device) + "\">" + td("Device", esc(k.device)) +
         td("Filesystem", k.target.empty() ? muted("not attributed") : esc(k.target)) + td("Last hour", esc(num(k.last_hour)), "num") +
         td("Last day", esc(num(k.last_day)), "num") + "</tr>\n";
  h += "</tbody></table>\n";

  if (!s.host_problems.empty()) {
    h += "<h2>Host problems</h2>\n<ul id=\"host-problems\">";
    for (const auto& p : s.host_problems) h += "<li>" + problem_html(p) + "</li>";
    h += "</ul>\n";
  }
  h += "<footer>fsauditd " + esc(s.version) + " on " + esc(host) +
       " &middot; <a href=\"/metrics\">metrics</a> &middot; <a href=\"/api/v1/status\">status as JSON</a></footer>\n</body></html>\n";
  return h;
}

}  // namespace fsaudit::http
