#pragma once
// What a probe run tells a person, beside its metrics: typed facts and problems in words. The status
// page, /api/v1/status and the D-Bus status are built from these (daemon/http/status), not by
// re-parsing the exposition by metric and label names: a renamed label cannot silently blank the page.
// Each probe fills in only what it knows, next to the code that knows it; the store keeps the last
// items per probe and target like it keeps samples, and build_status joins them by filesystem.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsaudit::metrics {

enum class Severity { info, warning, critical };

// A problem in plain words. `runbook` names the alert for the same thing (its section in
// docs/runbooks.md, the anchor its runbook_url links); "" when no alert covers it.
struct Problem {
  Severity severity = Severity::warning;
  std::string words;
  std::string runbook;
  bool operator==(const Problem&) const = default;
};

struct ScrubFacts {
  std::optional<double> age_seconds;  // since the last completed run; +Inf if never
  bool running = false, paused = false;
  std::optional<double> progress_ratio;
  std::map<std::string, double> errors;  // kind -> count (found, repaired, uncorrectable)
  std::string last_result, mode, decision;
  bool operator==(const ScrubFacts&) const = default;
};

// How many more member failures the filesystem or pool survives (the stack model), and its members
// that are down or at risk.
struct RedundancyFacts {
  std::optional<int> margin, designed;
  std::vector<std::string> members_down;  // "loop1 OFFLINE", "devid 2 missing"
  bool operator==(const RedundancyFacts&) const = default;
};

struct SetupFindingFacts {
  std::string rule, severity;
  bool operator==(const SetupFindingFacts&) const = default;
};

// An optional part kept out of line: most FsFacts have no scrub or redundancy facts, and every
// probe's items of every target carry an FsFacts (10,000 targets: about 60,000 of them). Used like
// std::optional (bool test, *, ->, assignment of a value); copies copy the value.
template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(T v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT: converts like std::optional
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  explicit operator bool() const { return p_ != nullptr; }
  bool has_value() const { return p_ != nullptr; }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  void reset() { p_.reset(); }
  bool operator==(const Boxed& o) const { return p_ && o.p_ ? *p_ == *o.p_ : !p_ && !o.p_; }

 private:
  std::unique_ptr<T> p_;
};

// Facts about one filesystem. Per-target probes name it by `target` (its name, usually the mount
// point); host-wide probes by what they see: a ZFS `pool`, or a kernel `device` name.
struct FsFacts {
  std::string target, pool, device;
  std::string fs, source;  // fstype and mount source, from the probes that read the mount table
  std::optional<bool> mounted, readonly, data_checksums;
  std::optional<double> size_bytes, avail_bytes, files, files_free;
  std::optional<double> fsync_p50_seconds, fsync_p99_seconds, fsync_p999_seconds;
  Boxed<ScrubFacts> scrub;
  Boxed<RedundancyFacts> redundancy;
  std::optional<double> members_at_risk;  // disks under it whose SMART says they may fail soon
  std::vector<SetupFindingFacts> setup_findings;
  // A canary with the same stack proved recently that corruption here is seen (and by which canary).
  std::optional<bool> detection_covered;
  std::string covering_canary;
  std::vector<Problem> problems;
  bool operator==(const FsFacts&) const = default;
};

// Storage errors the kernel logged about one device, in the last hour and day.
struct KernelErrorFacts {
  std::string device, target;  // target "" when no monitored filesystem was attributed
  double last_hour = 0, last_day = 0;
  bool operator==(const KernelErrorFacts&) const = default;
};

struct CanaryFacts {
  std::string name, fs, layout, mountpoint;
  std::string verdict;   // "" before the first cycle
  std::string expected;  // repaired, detected, blind
  std::optional<bool> expectation_met;
  std::optional<double> last_run;  // Unix time
  std::string meaning;             // what the verdict means, in plain words
  std::string story;               // what the last cycle did, in plain words
  bool operator==(const CanaryFacts&) const = default;
};

// How a job's last run went (filled in by the daemon, not by the probe).
struct RunFacts {
  std::string probe, target, reason;
  bool ok = true, stuck = false, host_wide = false;
  bool operator==(const RunFacts&) const = default;
};

struct StatusItems {
  std::vector<FsFacts> filesystems;
  std::vector<KernelErrorFacts> kernel_errors;
  std::vector<CanaryFacts> canaries;
  std::vector<RunFacts> runs;
  // The daemon's own (its build, whether the last configuration reload was taken).
  std::string version;
  std::optional<bool> config_reload_ok;
  bool operator==(const StatusItems&) const = default;
  bool empty() const {
    return filesystems.empty() && kernel_errors.empty() && canaries.empty() && runs.empty() && version.empty() &&
           !config_reload_ok;
  }
  void append(const StatusItems& o) {
    filesystems.insert(filesystems.end(), o.filesystems.begin(), o.filesystems.end());
    kernel_errors.insert(kernel_errors.end(), o.kernel_errors.begin(), o.kernel_errors.end());
    canaries.insert(canaries.end(), o.canaries.begin(), o.canaries.end());
    runs.insert(runs.end(), o.runs.begin(), o.runs.end());
    if (!o.version.empty()) version = o.version;
    if (o.config_reload_ok) config_reload_ok = o.config_reload_ok;
  }
  FsFacts& fs(const std::string& target) {
    for (auto& f : filesystems)
      if (f.target == target) return f;
    filesystems.push_back(FsFacts{});
    filesystems.back().target = target;
    return filesystems.back();
  }
};

}  // namespace fsaudit::metrics
