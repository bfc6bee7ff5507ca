#pragma once
// The kernel log watcher: host-scope probe that drains new kernel messages (journal or /dev/kmsg),
// bounded per run, classifies them and keeps running counters. Cursor and counters persist in
// <state_dir>/<state_file> so that a restart neither double-counts nor misses.
#include <map>
#include <memory>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/kernel_log/classify.hpp"
#include "probes/kernel_log/journal.hpp"
#include "probes/kernel_log/kmsg.hpp"

namespace fsaudit::kernel_log {

// Everything that survives a restart.
struct WatcherState {
  std::string source;  // "kmsg" | "journal" the position belongs to
  std::string boot_id;
  std::optional<std::uint64_t> kmsg_seq;
  std::optional<std::string> journal_cursor;
  // (device, fs, kind, target) -> count
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::uint64_t> errors;
  std::map<std::string, std::uint64_t> lines;  // per source
  std::map<std::string, std::uint64_t> lost;   // per source
  std::map<std::string, std::uint64_t> gaps;   // per source: resumed at the tail, not where it stopped
  std::map<std::string, double> last_event;    // kind -> unix seconds
  // btrfs "bdev X errs:" last printed values: (device, target) -> wr, rd, flush, corrupt, gen
  std::map<std::pair<std::string, std::string>, std::array<std::uint64_t, 5>> btrfs_dev_stats;
  // Errors of the last day for the status page's "last hour / last day", in one-minute buckets per
  // (device, target): kept here so that a restart does not forget them (the log is read on from the
  // saved position, so the lines are never seen again). Bounded: a day of minutes per key, and
  // kRecentMax buckets in all (an error storm keeps its newest buckets).
  struct RecentBucket {
    double minute = 0;  // unix seconds, start of the minute
    std::string device, target;
    std::uint64_t count = 0;
  };
  static constexpr std::size_t kRecentMax = 20000;
  std::deque<RecentBucket> recent;
  void add_recent(double when, const std::string& device, const std::string& target);
  void prune_recent(double now);  // drops buckets older than a day

  std::string to_json() const;
  static Result<WatcherState> from_json(std::string_view text);
};

// "auto" -> "journal" when journald runs (its socket exists under rootfs) and journal files exist,
// else "kmsg". An explicit journal_directory makes "auto" pick the journal.
std::string pick_source(const config::KernelLogConfig& cfg, const HostPaths& host);

class KernelLogProbe final : public Probe {
 public:
  explicit KernelLogProbe(config::KernelLogConfig cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "kernel_log"; }
  Scope scope() const override { return Scope::host; }
  ProbeResult run(const Target& target, ProbeContext& ctx) override;

 private:
  Result<void> init(ProbeContext& ctx);
  // Counts the event; true when it was an error (not a restatement of the kernel's own counters).
  bool handle(const Event& ev, double when, ProbeContext& ctx, std::unique_ptr<class TargetResolver>& resolver);
  metrics::Batch snapshot(const HostPaths& host) const;
  // device -> its whole disks, once known: a counter keeps its labels when the device goes away.
  mutable std::map<std::string, std::string> disks_;

  config::KernelLogConfig cfg_;
  std::mutex mu_;
  bool initialized_ = false;
  std::string source_;  // chosen source
  std::string path_;    // what it reads
  std::string boot_id_;
  std::string init_note_;  // why the start position was chosen
  WatcherState st_;
  KmsgReader kmsg_;
  JournalReader journal_;
  std::uint64_t lost_base_ = 0;  // lost count persisted before this process started
  double wall_now_ = 0;
};

std::unique_ptr<Probe> make_kernel_log_probe(const config::Config& cfg);

}  // namespace fsaudit::kernel_log
