#pragma once
// The "zfs" host probe: runs `zpool status` (JSON where supported, else text -p, else plain text,
// detected once and cached) and `zpool list -H`, and turns them into fsaudit_zfs_* metrics.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::zfs {

enum class StatusFormat { unknown, json, text_p, text };
std::string_view to_string(StatusFormat f);  // "json", "text_p", "text", "unknown"

// Remembered across runs: the last finished scrub per pool (zpool status only shows the latest
// scan, so a resilver would hide the previous scrub's end time).
struct ScrubMemory {
  std::int64_t end_time = 0;
  std::optional<double> duration_seconds, repaired_bytes;
  std::optional<std::uint64_t> errors;
};

// Pure: metrics for one probe run. `lists` may be empty (zpool list failed). `memory` is updated.
// With `full_detail` (zfs.detail: full) the pool, vdev and scan state sets carry every state (0/1),
// by default one series each, the current state (issue 33: a pool of 100 disks had 1,000 vdev state
// series, 900 of them 0); and only then the pool row's error counters (the sum of its vdevs' rows,
// which are exported) and zpool list's FREE, CAP and DEDUP (SIZE and ALLOC say the first two).
metrics::Batch build_zfs_metrics(const ZfsStatusReport& status, const std::vector<ZfsPoolList>& lists,
                                 StatusFormat format, std::map<std::string, ScrubMemory>& memory,
                                 bool full_detail = false);

// True when a pool's data vdevs (data/special/dedup roles) are all mirror/raidz/draid: it survives
// a member failure (its stack model's designed redundancy, probes/zfs/stack.hpp). copies=N datasets
// are not seen here.
bool pool_is_redundant(const ZfsPoolStatus& pool);

// One `zpool status` for two probes. The zfs probe posts every complete status it read; the scrub
// probe takes the last one instead of running zpool itself when it is recent and was started after
// the scrub probe's own last action on a pool (a scrub it started, paused or canceled since would not
// show in it). On zfs-fuse a zpool process is about 17 ms of CPU; the two probes ran one each every
// 30 s for the same text.
class StatusShare {
 public:
  // `started`: when the zpool command began (a status started before an action may predate it).
  void post(SteadyTime started, const std::string& zpool, const ZfsStatusReport& report);
  // The last post of `zpool`, if it began after the last note_action() and at most `max_age` ago.
  std::optional<ZfsStatusReport> recent(SteadyTime now, SteadyTime::duration max_age, const std::string& zpool) const;
  void note_action(SteadyTime at);

 private:
  mutable std::mutex mu_;
  std::optional<SteadyTime> started_;
  std::string zpool_;
  ZfsStatusReport report_;
  std::optional<SteadyTime> last_action_;
};

// How long the zfs probe keeps `zpool list`'s rows (size, allocated, free, fragmentation, capacity,
// dedup). They move slowly, and a zpool process is most of the probe's CPU: the list runs every
// fourth status at the default 30 s interval. A pool without a kept row (just imported) runs it at once.
inline constexpr auto kPoolListMaxAge = std::chrono::seconds(120);

class ZfsProbe final : public Probe {
 public:
  explicit ZfsProbe(std::shared_ptr<StatusShare> share = nullptr, bool full_detail = false)
      : full_detail_(full_detail), share_(std::move(share)) {}
  std::string name() const override { return "zfs"; }
  Scope scope() const override { return Scope::host; }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

  StatusFormat detected_format() const;

 private:
  // One run's `zpool status`: parsed, complete, in the format it came in, and when it began.
  struct StatusRead {
    ZfsStatusReport report;
    StatusFormat format = StatusFormat::unknown;
    SteadyTime started{};
  };
  // `zpool list`'s rows for the pools of the status (kept rows while fresh), and why not all of them.
  struct ListRead {
    std::vector<ZfsPoolList> rows;
    std::string problem;  // empty when every pool has its row
  };
  // zpool status in the best format this zpool takes (detected once, downgraded only on "invalid
  // option"); the run's result instead where the run ends there (no zpool, no pools, a failure).
  std::variant<StatusRead, ProbeResult> read_status(const std::string& zpool, ProbeContext& ctx);
  ListRead read_lists(const std::string& zpool, const ZfsStatusReport& status, ProbeContext& ctx);

  mutable std::mutex mu_;
  StatusFormat format_ = StatusFormat::unknown;
  std::string format_tool_;  // the zpool path the detection was made for
  std::size_t list_format_ = 0;  // which `zpool list` form works (index into the tries)
  std::string list_format_tool_;
  // The last complete `zpool list` (of list_format_tool_): its rows and when it began; reset on a failed list.
  std::vector<ZfsPoolList> lists_;
  std::optional<SteadyTime> lists_at_;
  std::map<std::string, ScrubMemory> scrubs_;
  bool full_detail_;
  std::shared_ptr<StatusShare> share_;
};

std::unique_ptr<Probe> make_zfs_probe(const config::Config& cfg, std::shared_ptr<StatusShare> share = nullptr);

}  // namespace fsaudit::zfs
