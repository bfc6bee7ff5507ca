#pragma once
// The status model behind GET /, GET /api/v1/status and the D-Bus API: built from the typed status
// items the probes published beside their metrics (daemon/metrics/status_items.hpp), joined by
// filesystem. The rules that alerts also apply (fill levels, forecasts, scrub age, fsync p99) take
// their numbers from alerts/thresholds.yml; every other rule lives with the probe that knows it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "alerts/thresholds.hpp"
#include "daemon/core/units.hpp"
#include "daemon/metrics/status_items.hpp"

namespace fsaudit::http {

enum class Health { ok, warning, critical, unknown };
std::string to_string(Health h);

// Each key's (probe x target) last status items, as metrics::Store::status() hands them over.
using StatusItemsByKey = std::map<std::string, metrics::StatusItems>;

using CanaryStatus = metrics::CanaryFacts;
using ScrubStatus = metrics::ScrubFacts;
using SetupFinding = metrics::SetupFindingFacts;
using KernelErrors = metrics::KernelErrorFacts;

// A problem in words, with the link to its runbook section ("" when no alert covers it).
struct ProblemStatus {
  Health severity = Health::warning;
  std::string text;
  std::string runbook_url;
  std::string target;  // the filesystem it is about; "" for the host
};

struct ProbeIssue {
  std::string probe, target, reason;
  bool stuck = false;
};

// Protected: checksummed, and a canary on the same stack proved recently that corruption is
// repaired; exposed: not (yet) proven, or corruption would be returned silently; broken: critical.
enum class Protection { protected_, exposed, broken };
std::string to_string(Protection p);

struct TargetStatus {
  std::string name, fs, device;
  std::optional<bool> mounted, readonly, data_checksums;
  Health health = Health::unknown;
  std::vector<ProblemStatus> problems;  // why health is not ok, worst first
  Protection protection = Protection::exposed;
  std::string protection_reason;  // in words
  std::optional<double> size_bytes, avail_bytes, files, files_free;
  std::optional<double> days_to_full;
  std::vector<std::string> canaries;  // canaries of this filesystem type
  std::optional<ScrubStatus> scrub;
  std::optional<double> fsync_p50_seconds, fsync_p99_seconds, fsync_p999_seconds;
  std::vector<SetupFinding> setup_findings;
  std::vector<ProbeIssue> probe_issues;
  std::vector<KernelErrors> kernel_errors;
  std::optional<bool> detection_covered;
  std::string covering_canary;
  std::optional<metrics::RedundancyFacts> redundancy;  // its own (btrfs) or its pool's (ZFS)
  std::optional<double> members_at_risk;
};

struct Status {
  double generated_at = 0;
  std::string version, host;
  Health overall = Health::unknown;
  std::string summary;
  int protected_count = 0, exposed_count = 0, broken_count = 0;
  std::optional<ProblemStatus> first;  // what to do first: the worst problem on the host
  std::optional<bool> config_reload_ok;
  std::vector<TargetStatus> targets;
  std::vector<CanaryStatus> canaries;
  std::vector<ProbeIssue> host_issues;      // failing host-wide probes (zfs, md, kernel_log, scrub)
  std::vector<ProblemStatus> host_problems;  // problems of no monitored filesystem (a pool, a device)
  std::vector<KernelErrors> kernel_errors;   // every device the kernel logged storage errors on
  const TargetStatus* target(const std::string& name) const;
  const CanaryStatus* canary(const std::string& name) const;
};

// Remembers available bytes per target over time, so "days to full" comes from a trend and not
// from one sample. Thread-safe. Memory per target is bounded and small whatever the uptime: the
// least-squares moments of each two hours (kBuckets per window), not every point (a day of one point
// a minute was 23 KiB per target, 230 MB on a host with 10,000 datasets). The fit is the exact
// least-squares line through every point kept; the window's oldest edge moves by whole buckets, so
// it spans between the window and the window plus one bucket.
class CapacityTrend {
 public:
  static constexpr int kBuckets = 12;
  explicit CapacityTrend(double window_seconds = thresholds::capacity_forecast_history_seconds) : window_(window_seconds) {}
  void add(const std::string& target, double t, double avail_bytes);
  // Days until avail reaches 0 at the least-squares rate over the window; nullopt while the history
  // is shorter than the alert's `for:` or avail is not falling.
  std::optional<double> days_to_full(const std::string& target) const;
  // Adds every target's avail, and forgets targets with nothing inside the window (unmounted).
  void observe(const StatusItemsByKey& items, double now);
  // The same in steps, for a reader that has one key's items at a time: each key's, then expire().
  void observe(const metrics::StatusItems& items, double now);
  void expire(double now);
  std::size_t targets() const;  // for tests

 private:
  // One bucket's points as their count, means and centred sums (Welford's update), x the seconds since
  // the bucket's start: 32 bytes. After a day every watched filesystem holds kBuckets + 1 of them, 416
  // bytes (hourly raw sums of 48 bytes were 1.2 KB, 12 MB at 10,000 filesystems). Centred, the x
  // moments keep their precision in floats: x is below the bucket's length.
  struct Bucket {
    std::int32_t index = 0;  // the bucket's start, in bucket lengths since the epoch
    std::uint32_t n = 0;
    float mean_x = 0, sxx = 0;    // mean of x, sum of (x - mean_x)^2
    double mean_a = 0, sxa = 0;   // mean of avail, sum of (x - mean_x)(a - mean_a)
  };
  static_assert(sizeof(Bucket) == 32);
  struct History {
    std::vector<Bucket> buckets;  // oldest first, at most kBuckets + 1 (never more room than that)
    double first_t = 0;           // the first point kept (the history's start, for the alert's `for:`)
    double last_t = 0, last_avail = 0;
  };
  double window_;
  mutable std::mutex mu_;
  std::map<std::string, History> hist_;
};

Status build_status(const StatusItemsByKey& items, double now, const CapacityTrend* trend = nullptr,
                    const std::string& host = "");

// This machine's name, for the page's title and heading.
std::string this_host();

// The runbook section of an alert (docs/runbooks.md), as the alert's runbook_url links it.
std::string runbook_url(const std::string& alert);

// JSON schema "fsaudit.status/v1", documented in docs/status-api.md.
nlohmann::json to_json(const Status& s);
nlohmann::json to_json(const TargetStatus& t);
nlohmann::json to_json(const CanaryStatus& c);
// The page for a person: self-contained HTML, no scripts, refreshes itself every `refresh_seconds`.
std::string render_html(const Status& s, int refresh_seconds = 30);

using fsaudit::format_bytes;  // daemon/core/units.hpp: fsauditctl shares them without the HTTP server
inline std::string format_duration(double seconds) { return format_seconds(seconds); }

}  // namespace fsaudit::http
