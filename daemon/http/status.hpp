#pragma once
// The status model behind GET /, GET /api/v1/status and the D-Bus API: a view over the metrics the
// probes published (parsed from the store's exposition), so it needs nothing from the probes
// themselves and can never disagree with /metrics.
#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alerts/thresholds.hpp"
#include "daemon/core/units.hpp"
#include "daemon/http/exposition.hpp"

namespace fsaudit::http {

enum class Health { ok, warning, critical, unknown };
std::string to_string(Health h);

struct CanaryStatus {
  std::string name, fs, layout, mountpoint;
  std::string verdict;   // repaired, detected, silent, unverified, not_injectable, refused, error; "" before the first cycle
  std::string expected;  // repaired, detected, blind
  std::optional<bool> expectation_met;
  std::optional<double> last_run;  // Unix time
  std::string story;               // what the last cycle did, in plain words
};

struct ScrubStatus {
  std::optional<double> age_seconds;  // since the last completed run; +Inf if never
  bool running = false, paused = false;
  std::optional<double> progress_ratio;
  std::map<std::string, double> errors;  // kind -> count (found, repaired, uncorrectable)
  std::string last_result, mode, decision;
};

struct ProbeIssue {
  std::string probe, target, reason;
  bool stuck = false;
};

struct SetupFinding {
  std::string rule, severity;
};

struct TargetStatus {
  std::string name, fs, device;
  std::optional<bool> mounted, readonly, data_checksums;
  Health health = Health::unknown;
  std::vector<std::string> problems;  // why health is not ok, in plain words
  std::optional<double> size_bytes, avail_bytes;
  std::optional<double> days_to_full;
  std::vector<std::string> canaries;  // canaries of this filesystem type
  std::optional<ScrubStatus> scrub;
  std::optional<double> fsync_p50_seconds, fsync_p99_seconds, fsync_p999_seconds;
  std::vector<SetupFinding> setup_findings;
  std::vector<ProbeIssue> probe_issues;
};

struct Status {
  double generated_at = 0;
  std::string version;
  Health overall = Health::unknown;
  std::string summary;
  std::optional<bool> config_reload_ok;
  std::vector<TargetStatus> targets;
  std::vector<CanaryStatus> canaries;
  std::vector<ProbeIssue> host_issues;  // failing host-wide probes (zfs, md, kernel_log, scrub)
  const TargetStatus* target(const std::string& name) const;
  const CanaryStatus* canary(const std::string& name) const;
};

// Remembers available bytes per target over time, so "days to full" comes from a trend and not
// from one sample. Thread-safe.
class CapacityTrend {
 public:
  explicit CapacityTrend(double window_seconds = thresholds::capacity_forecast_history_seconds) : window_(window_seconds) {}
  void add(const std::string& target, double t, double avail_bytes);
  // Days until avail reaches 0 at the least-squares rate over the window; nullopt when the history is
  // shorter than 10 minutes or avail is not falling.
  std::optional<double> days_to_full(const std::string& target) const;
  void observe(const Exposition& e, double now);
  static constexpr std::string_view kFamily = "fsaudit_filesystem_avail_bytes";  // what observe() reads

 private:
  double window_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::pair<double, double>>> hist_;
};

Status build_status(const Exposition& e, double now, const CapacityTrend* trend = nullptr);

// JSON schema "fsaudit.status/v1", documented in docs/status-api.md.
nlohmann::json to_json(const Status& s);
nlohmann::json to_json(const TargetStatus& t);
nlohmann::json to_json(const CanaryStatus& c);
// The page for a person: self-contained HTML, no scripts, refreshes itself every `refresh_seconds`.
std::string render_html(const Status& s, int refresh_seconds = 30);

// Plain-words helpers shared with fsauditctl.
std::string verdict_meaning(const std::string& verdict);
using fsaudit::format_bytes;  // daemon/core/units.hpp: fsauditctl shares them without the HTTP server
inline std::string format_duration(double seconds) { return format_seconds(seconds); }

}  // namespace fsaudit::http
