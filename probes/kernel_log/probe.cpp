#include "probes/kernel_log/probe.hpp"

#include <time.h>

#include <cmath>

#include <nlohmann/json.hpp>
#include <system_error>

#include "daemon/core/disk_identity.hpp"
#include "daemon/metrics/derive_label.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/kernel_log/attribution.hpp"

namespace fsaudit::kernel_log {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string WatcherState::to_json() const {
  json j;
  j["version"] = 1;
  j["source"] = source;
  j["boot_id"] = boot_id;
  if (kmsg_seq) j["kmsg_seq"] = *kmsg_seq;
  if (journal_cursor) j["journal_cursor"] = *journal_cursor;
  json errs = json::array();
  for (const auto& [k, v] : errors)
    errs.push_back({{"device", std::get<0>(k)}, {"fs", std::get<1>(k)}, {"kind", std::get<2>(k)},
                    {"target", std::get<3>(k)}, {"count", v}});
  j["errors"] = errs;
  j["lines"] = lines;
  j["lost"] = lost;
  j["gaps"] = gaps;
  j["last_event"] = last_event;
  json ds = json::array();
  for (const auto& [k, v] : btrfs_dev_stats) ds.push_back({{"device", k.first}, {"target", k.second}, {"stats", v}});
  j["btrfs_dev_stats"] = ds;
  json rs = json::array();
  for (const auto& r : recent)
    rs.push_back({{"minute", r.minute}, {"device", r.device}, {"target", r.target}, {"count", r.count}});
  j["recent"] = rs;
  // Keys come from kernel lines: never let one invalid byte make the state unsavable.
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<WatcherState> WatcherState::from_json(std::string_view text) {
  try {
    auto j = json::parse(text);
    if (j.value("version", 0) != 1) return err("unknown state version");
    WatcherState s;
    s.source = j.value("source", "");
    s.boot_id = j.value("boot_id", "");
    if (j.contains("kmsg_seq")) s.kmsg_seq = j["kmsg_seq"].get<std::uint64_t>();
    if (j.contains("journal_cursor")) s.journal_cursor = j["journal_cursor"].get<std::string>();
    for (const auto& e : j.value("errors", json::array()))
      s.errors[{e.at("device").get<std::string>(), e.at("fs").get<std::string>(), e.at("kind").get<std::string>(),
                e.at("target").get<std::string>()}] = e.at("count").get<std::uint64_t>();
    s.lines = j.value("lines", std::map<std::string, std::uint64_t>{});
    s.lost = j.value("lost", std::map<std::string, std::uint64_t>{});
    s.gaps = j.value("gaps", std::map<std::string, std::uint64_t>{});
    s.last_event = j.value("last_event", std::map<std::string, double>{});
    for (const auto& e : j.value("btrfs_dev_stats", json::array()))
      s.btrfs_dev_stats[{e.at("device").get<std::string>(), e.at("target").get<std::string>()}] =
          e.at("stats").get<std::array<std::uint64_t, 5>>();
    for (const auto& e : j.value("recent", json::array())) {  // absent in files written before it existed
      if (s.recent.size() >= kRecentMax) break;
      s.recent.push_back({e.at("minute").get<double>(), e.at("device").get<std::string>(),
                          e.at("target").get<std::string>(), e.at("count").get<std::uint64_t>()});
    }
    return s;
  } catch (const std::exception& e) {
    return err(std::string("bad state file: ") + e.what());
  }
}

void WatcherState::add_recent(double when, const std::string& device, const std::string& target) {
  const double minute = std::floor(when / 60) * 60;
  // Lines arrive in time order, so a minute's buckets are at the back.
  for (auto it = recent.rbegin(); it != recent.rend() && it->minute == minute; ++it)
    if (it->device == device && it->target == target) {
      ++it->count;
      return;
    }
  recent.push_back({minute, device, target, 1});
  if (recent.size() > kRecentMax) recent.pop_front();
}

void WatcherState::prune_recent(double now) {
  std::erase_if(recent, [&](const RecentBucket& r) { return r.minute + 60 <= now - 86400; });
}

std::string pick_source(const config::KernelLogConfig& cfg, const HostPaths& host) {
  if (cfg.source != "auto") return cfg.source;
  if (!cfg.journal_directory.empty()) return "journal";
  std::error_code ec;
  if (!fs::exists(host.rootfs / "run/systemd/journal/socket", ec)) return "kmsg";
  for (const char* base : {"run/log/journal", "var/log/journal"}) {
    std::error_code e1;
    for (const auto& dir : fs::directory_iterator(host.rootfs / base, e1)) {
      std::error_code e2;
      for (const auto& f : fs::directory_iterator(dir.path(), e2))
        if (f.path().extension() == ".journal") return "journal";
    }
  }
  return "kmsg";
}

Result<void> KernelLogProbe::init(ProbeContext& ctx) {
  source_ = pick_source(cfg_, ctx.host);
  auto bid = read_file(ctx.host.proc("sys/kernel/random/boot_id"));
  boot_id_ = bid ? std::string(trim(*bid)) : "";

  bool have_state = false;
  auto state_path = ctx.state_dir / cfg_.state_file;
  std::error_code ec;
  if (fs::exists(state_path, ec)) {
    auto text = read_file(state_path);
    if (!text) return err("cannot read state " + state_path.string() + ": " + text.error());
    auto s = WatcherState::from_json(*text);
    if (!s) {
      // Keep the broken file for inspection and start over rather than failing forever.
      fs::rename(state_path, state_path.string() + ".corrupt", ec);
      init_note_ = s.error() + "; moved aside to " + state_path.string() + ".corrupt";
    } else {
      st_ = std::move(*s);
      have_state = true;
    }
  }
  lost_base_ = st_.lost[source_];
  const bool from_boot_cfg = cfg_.start_at == "boot";
  if (source_ == "kmsg") {
    path_ = ctx.host.dev("kmsg").string();
    std::optional<std::uint64_t> resume;
    bool from_end = !from_boot_cfg;
    if (have_state && st_.source == "kmsg" && !boot_id_.empty() && st_.boot_id == boot_id_ && st_.kmsg_seq) {
      resume = st_.kmsg_seq;  // same boot: continue after the last record counted
      init_note_ = "resumed after seq " + std::to_string(*st_.kmsg_seq);
    } else if (have_state && st_.source == "kmsg") {
      from_end = false;  // rebooted while we were away: this boot's messages are all new to us
      init_note_ = "new boot: reading this boot's buffer from the start";
    } else {
      init_note_ = from_end ? "first start: from the current end" : "first start: from the start of this boot";
    }
    auto r = kmsg_.open(path_, resume, from_end);
    if (!r) return r;
    st_.kmsg_seq = kmsg_.last_seq();  // unset = before the oldest record (this boot from its start)
  } else {
    path_ = cfg_.journal_directory.empty() ? "(local journal)" : cfg_.journal_directory;
    std::optional<std::string> cursor;
    bool from_boot = from_boot_cfg;
    if (have_state && st_.source == "journal" && st_.journal_cursor) {
      cursor = st_.journal_cursor;  // the journal keeps old boots: the cursor stays valid across reboots
      init_note_ = "resumed at cursor";
    } else if (have_state && st_.source == "journal") {
      // Saved at a first start that found no entry to name its position: everything since is new.
      from_boot = true;
      init_note_ = "no saved cursor (the journal was empty): from the start of this boot";
    } else {
      init_note_ = from_boot_cfg ? "first start: from the start of this boot" : "first start: from the current end";
    }
    auto r = journal_.open(cfg_.journal_directory, cursor, from_boot && !cursor);
    if (!r) return r;
    if (journal_.cursor_invalid()) {
      st_.gaps["journal"] += 1;  // saved below: counted once, not at every restart
      init_note_ = "saved cursor rejected by the journal: continuing at the tail (gap counted)";
    }
    st_.journal_cursor = journal_.cursor();
  }
  st_.source = source_;
  st_.boot_id = boot_id_;
  // The start position is saved before anything is counted: a process killed before its first
  // counted line restarts here, not at a later "current end" that would skip the lines in between.
  fs::create_directories(ctx.state_dir, ec);
  auto w = write_file_atomic(state_path, st_.to_json(), 0600);
  if (!w) return err("cannot save kernel log state (the start position would be lost by a restart): " + w.error());
  initialized_ = true;
  return {};
}

bool KernelLogProbe::handle(const Event& ev, double when, ProbeContext& ctx,
                            std::unique_ptr<TargetResolver>& resolver) {
  if (!resolver) resolver = std::make_unique<TargetResolver>(ctx.host);
  if (ev.kind == kind::device_stats) {
    // The kernel's own cumulative per-device counters, restating the event on the previous line (or
    // printed at mount time): exported as a gauge, never added to fsaudit_kernel_errors_total.
    st_.btrfs_dev_stats[{ev.device, resolver->target_of(ev)}] = ev.stats;
    return false;
  }
  const std::string target = resolver->target_of(ev);
  st_.errors[{ev.device, ev.fs, std::string(ev.kind), target}] += 1;
  if (ev.kind != kind::repaired) st_.add_recent(when, ev.device, target);
  auto& last = st_.last_event[std::string(ev.kind)];
  if (when > last) last = when;
  return true;
}

namespace {
ProbeResult stale_if(bool counted_error, ProbeResult r) {
  r.mount_table_stale = counted_error;
  return r;
}
}  // namespace

ProbeResult KernelLogProbe::run(const Target&, ProbeContext& ctx) {
  std::lock_guard lock(mu_);
  try {
    if (!initialized_) {
      auto r = init(ctx);
      if (!r) return ProbeResult::failed(r.error());
    }
    // Wall time of a kmsg timestamp: now minus its age on CLOCK_MONOTONIC (what printk uses, roughly).
    timespec mono{};
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const double mono_now = static_cast<double>(mono.tv_sec) + mono.tv_nsec / 1e9;
    const double wall_now = ctx.clock.wall_seconds();

    std::unique_ptr<TargetResolver> resolver;  // built lazily, once per run, only when an event needs it
    std::uint64_t n = 0;
    bool counted = false;  // an error was counted in this run
    std::string error;
    const auto max = static_cast<std::uint64_t>(cfg_.max_lines_per_run);
    while (n < max) {
      if ((n & 255) == 255 && (ctx.stop.stop_requested() || ctx.clock.now() >= ctx.deadline)) break;
      std::string msg;
      double when = wall_now;
      if (source_ == "kmsg") {
        auto rec = kmsg_.next();
        if (!rec) error = rec.error();
        if (!rec || !*rec) break;
        msg = std::move((*rec)->message);
        when = wall_now - (mono_now - static_cast<double>((*rec)->ts_usec) / 1e6);
      } else {
        auto e = journal_.next();
        if (!e) error = e.error();
        if (!e || !*e) break;
        msg = std::move((*e)->message);
        if ((*e)->realtime_usec) when = static_cast<double>((*e)->realtime_usec) / 1e6;
      }
      ++n;
      if (auto ev = classify(msg)) counted = handle(*ev, when, ctx, resolver) || counted;
    }
    wall_now_ = wall_now;
    st_.prune_recent(wall_now);
    if (n > 0) {
      st_.lines[source_] += n;
      if (source_ == "kmsg") {
        st_.kmsg_seq = kmsg_.last_seq();
        st_.lost["kmsg"] = lost_base_ + kmsg_.lost();
      } else {
        st_.journal_cursor = journal_.cursor();
      }
      std::error_code ec;
      fs::create_directories(ctx.state_dir, ec);
      auto w = write_file_atomic(ctx.state_dir / cfg_.state_file, st_.to_json(), 0600);
      if (!w) return stale_if(counted, ProbeResult::failed("cannot save kernel log state (counts would repeat after a restart): " +
                                                           w.error(), snapshot(ctx.host)));
    }
    if (!error.empty()) {
      // Reopen on the next run, resuming after what was counted.
      initialized_ = false;
      return stale_if(counted, ProbeResult::failed(error, snapshot(ctx.host)));
    }
    return stale_if(counted, ProbeResult::ok(snapshot(ctx.host)));
  } catch (const std::exception& e) {
    return ProbeResult::failed(std::string("kernel_log: ") + e.what());
  }
}

metrics::Batch KernelLogProbe::snapshot(const HostPaths& host) const {
  metrics::Batch b;
  for (const auto& [k, v] : st_.errors)
    b.counter("fsaudit_kernel_errors_total",
              "Storage error reports in the kernel log, by kind (checksum, io, metadata_corruption, fs_error, "
              "shutdown, md_failure, md_mismatch, repaired, unrepairable); one per log line",
              {{"device", std::get<0>(k)}, {"fs", std::get<1>(k)}, {"kind", std::get<2>(k)}, {"target", std::get<3>(k)}},
              static_cast<double>(v));
  std::map<std::pair<std::string, std::string>, metrics::KernelErrorFacts> recent;  // (device, target)
  for (const auto& r : st_.recent) {
    auto& k = recent[{r.device, r.target}];
    k.device = r.device;
    k.target = r.target;
    k.last_day += static_cast<double>(r.count);
    if (r.minute + 60 > wall_now_ - 3600) k.last_hour += static_cast<double>(r.count);
  }
  for (auto& [key, k] : recent) {
    if (!k.target.empty())
      b.status.fs(k.target).problems.push_back(
          {k.last_hour > 0 ? metrics::Severity::critical : metrics::Severity::warning,
           "the kernel logged " + std::to_string(static_cast<long long>(k.last_day)) + " storage error(s) on " +
               (k.device.empty() ? std::string("its device") : k.device) + " in the last day (" +
               std::to_string(static_cast<long long>(k.last_hour)) + " in the last hour)",
           "FsauditKernelStorageErrors"});
    b.status.kernel_errors.push_back(std::move(k));
  }
  b.counter("fsaudit_kernel_log_lines_total", "Kernel log records read by the kernel log watcher",
            {{"source", source_}}, static_cast<double>(st_.lines.count(source_) ? st_.lines.at(source_) : 0));
  if (source_ == "kmsg")
    b.counter("fsaudit_kernel_log_lost_messages_total",
              "Kernel log records overwritten in the ring buffer before the watcher read them",
              {{"source", source_}}, static_cast<double>(st_.lost.count("kmsg") ? st_.lost.at("kmsg") : 0));
  b.counter("fsaudit_kernel_log_gaps_total",
            "Times the watcher could not resume where it stopped (its saved journal cursor was rejected) and "
            "continued at the tail; entries in between were not read",
            {{"source", source_}}, static_cast<double>(st_.gaps.count(source_) ? st_.gaps.at(source_) : 0));
  b.info("fsaudit_kernel_log_source_info", "Where the kernel log watcher reads kernel messages from",
         {{"source", source_}, {"path", path_}});
  for (const auto& [k, t] : st_.last_event)
    b.gauge("fsaudit_kernel_log_last_event_timestamp_seconds",
            "Time of the newest kernel log storage error report of this kind", {{"kind", k}}, t);
  static const char* names[5] = {"write", "read", "flush", "corruption", "generation"};
  for (const auto& [k, v] : st_.btrfs_dev_stats)
    for (int i = 0; i < 5; ++i)
      b.gauge("fsaudit_kernel_btrfs_reported_device_errors",
              "Last per-device btrfs error counter values printed by the kernel ('bdev X errs: ...' lines)",
              {{"device", k.first}, {"target", k.second}, {"counter", names[i]}}, static_cast<double>(v[i]));
  b = metrics::with_derived_label(b, "device", "disk", [&](const std::string& d) {
    auto& known = disks_[d];
    if (known.empty()) known = block::disk_label(host, d);
    return known;
  });
  return b;
}

std::unique_ptr<Probe> make_kernel_log_probe(const config::Config& cfg) {
  return std::make_unique<KernelLogProbe>(cfg.kernel_log);
}

}  // namespace fsaudit::kernel_log
