#include "probes/zfs/probe.hpp"

#include <algorithm>
#include <set>

#include "daemon/config/config.hpp"
#include "daemon/core/disk_identity.hpp"
#include "daemon/metrics/derive_label.hpp"
#include "daemon/core/strings.hpp"
#include "probes/zfs/members.hpp"
#include "probes/stack/series.hpp"
#include "probes/zfs/stack.hpp"

namespace fsaudit::zfs {

std::string_view to_string(StatusFormat f) {
  switch (f) {
    case StatusFormat::json: return "json";
    case StatusFormat::text_p: return "text_p";
    case StatusFormat::text: return "text";
    case StatusFormat::unknown: break;
  }
  return "unknown";
}

namespace {

const std::vector<std::string> kPoolStates = {"online", "degraded", "faulted", "offline",
                                              "unavail", "removed", "suspended"};
const std::vector<std::string> kVdevStates = {"online", "degraded", "faulted", "offline", "unavail",
                                              "removed", "avail", "inuse", "unknown"};
const std::vector<std::string> kScanStates = {"none", "in_progress", "finished", "canceled", "paused"};
const std::vector<std::string> kScanFunctions = {"none", "scrub", "resilver", "error_scrub"};

const char* kListColumns = "name,size,allocated,free,fragmentation,capacity,dedupratio,health";
const char* kListColumnsLegacy = "name,size,allocated,free,capacity,health";  // zfs-fuse / pool v23

std::string vdev_state(std::string_view s) {
  auto l = to_lower(s);
  if (l == "healthy") return "online";  // JSON of some 2.3 builds
  if (std::find(kVdevStates.begin(), kVdevStates.end(), l) == kVdevStates.end()) return "unknown";
  return l;
}

bool rejected_option(const CommandResult& r) {
  auto e = to_lower(r.err + r.out);
  return r.exited && r.exit_code != 0 &&
         (e.find("invalid option") != std::string::npos || e.find("unrecognized option") != std::string::npos ||
          e.find("illegal option") != std::string::npos || e.find("unknown option") != std::string::npos);
}

bool says_no_pools(const CommandResult& r) {
  return (r.out + r.err).find("no pools available") != std::string::npos;
}

bool says_no_zfs(const CommandResult& r) {
  auto e = r.err + r.out;
  return e.find("modules are not loaded") != std::string::npos ||
         e.find("zfs-fuse daemon is running") != std::string::npos ||  // zfs-fuse not started
         e.find("/dev/zfs and /proc/self/mounts are required") != std::string::npos;
}

}  // namespace

bool pool_is_redundant(const ZfsPoolStatus& pool) { return stack_model(pool).designed_redundancy.value_or(0) > 0; }

// What the page says about a pool: the datasets mounted from it show it (build_status joins by pool).
void pool_status_facts(metrics::Batch& b, const ZfsPoolStatus& p, const stack::StackModel& model) {
  metrics::FsFacts f;
  f.pool = p.name;
  f.fs = "zfs";
  f.redundancy = metrics::RedundancyFacts{model.margin, model.designed_redundancy, model.bad_member_texts()};
  const std::string state = to_lower(p.state);
  if (state != "online")
    f.problems.push_back({metrics::Severity::critical,
                          "pool " + p.name + " is " + state,
                          state == "degraded" ? "FsauditZfsPoolDegraded" : "FsauditZfsPoolUnavailable"});
  if (p.data_errors && *p.data_errors > 0)
    f.problems.push_back({metrics::Severity::critical,
                          "pool " + p.name + " has " + std::to_string(*p.data_errors) + " file(s) with permanent errors",
                          "FsauditZfsPoolDataErrors"});
  std::uint64_t errors = p.read_errors.value_or(0) + p.write_errors.value_or(0) + p.checksum_errors.value_or(0);
  if (errors > 0)
    f.problems.push_back({metrics::Severity::warning,
                          "pool " + p.name + " error counters total " + std::to_string(errors) + " (zpool status -v)",
                          "FsauditZfsVdevErrorsIncreasing"});
  b.status.filesystems.push_back(std::move(f));
}

metrics::Batch build_zfs_metrics(const ZfsStatusReport& status, const std::vector<ZfsPoolList>& lists,
                                 StatusFormat format, std::map<std::string, ScrubMemory>& memory, bool full_detail) {
  metrics::Batch b;
  auto states = [&](const char* name, const char* help, const metrics::Labels& l, const std::vector<std::string>& all,
                    const std::string& current) {
    if (full_detail) b.stateset(name, help, l, all, current);
    else b.current_state(name, help, l, current);
  };
  b.info("fsaudit_zfs_probe_info", "How the zfs probe read zpool status (format: json, text_p, text).",
         {{"format", std::string(to_string(format))}});
  for (const auto& p : status.pools) {
    const metrics::Labels pl = {{"pool", p.name}};
    states("fsaudit_zfs_pool_state", "ZFS pool state as zpool status reports it (1 = current).", pl, kPoolStates,
           to_lower(p.state));
    if (p.data_errors)
      b.gauge("fsaudit_zfs_pool_data_errors",
              "Data errors (files/objects with permanent errors) zpool status reports for the pool.", pl,
              static_cast<double>(*p.data_errors));
    for (auto [kind, val] : {std::pair{"read", p.read_errors}, {"write", p.write_errors}, {"checksum", p.checksum_errors}})
      if (val && full_detail)
        b.gauge("fsaudit_zfs_pool_errors", "Error counters of the pool's root vdev row (reset by zpool clear).",
                {{"pool", p.name}, {"kind", kind}}, static_cast<double>(*val));
    const auto model = stack_model(p);
    pool_status_facts(b, p, model);
    // Whether the pool is redundant at all is fsaudit_redundancy_designed > 0 (the stack model's one
    // answer), not a second series; a pool built without redundancy has neither.
    stack::redundancy_series(b, model, p.name, "zfs");

    std::map<std::string, int> seen;
    for (const auto& v : p.vdevs) {
      std::string id = v.name;
      if (int n = ++seen[v.name]; n > 1) id += "#" + std::to_string(n);  // legacy repeated "mirror"
      metrics::Labels vl = {{"pool", p.name}, {"vdev", id}, {"vdev_type", v.type}, {"role", v.role}};
      states("fsaudit_zfs_vdev_state", "ZFS vdev state (1 = current); spares are avail/inuse.", vl, kVdevStates,
             vdev_state(v.state));
      // A vdev's error counters only while not 0 by default (zfs.detail: full, always): most vdevs have
      // none, and the alert fires when one rises or appears (issue 33's series budget).
      for (auto [kind, val] : {std::pair{"read", v.read_errors}, {"write", v.write_errors}, {"checksum", v.checksum_errors}}) {
        if (!val || (*val == 0 && !full_detail)) continue;
        auto l = vl;
        l["kind"] = kind;
        b.gauge("fsaudit_zfs_vdev_errors",
                "Read/write/checksum error counters of a vdev as zpool status prints them (gauge: zpool clear resets them).",
                l, static_cast<double>(*val));
      }
    }

    const auto& s = p.scan;
    states("fsaudit_zfs_scan_function", "Function of the pool's latest scan (none, scrub, resilver, error_scrub).", pl,
           kScanFunctions, std::string(to_string(s.function)));
    states("fsaudit_zfs_scan_state", "State of the pool's latest scan.", pl, kScanStates, std::string(to_string(s.state)));
    auto g = [&](const char* name, const char* help, const std::optional<double>& v) {
      if (v) b.gauge(name, help, pl, *v);
    };
    bool running = s.state == ScanState::in_progress || s.state == ScanState::paused;
    if (running) {
      g("fsaudit_zfs_scan_progress_ratio", "Progress of the running scan (0..1).", s.progress_ratio);
      g("fsaudit_zfs_scan_examined_bytes", "Bytes scanned so far by the running scan.", s.examined_bytes);
      g("fsaudit_zfs_scan_issued_bytes", "Bytes issued (verified) so far by the running scan.", s.issued_bytes);
      g("fsaudit_zfs_scan_total_bytes", "Bytes the running scan has to examine.", s.total_bytes);
      g("fsaudit_zfs_scan_eta_seconds", "Estimated time to completion of the running scan.", s.eta_seconds);
    }
    if (s.start_time)
      b.gauge("fsaudit_zfs_scan_start_timestamp_seconds", "Start of the latest scan (Unix time).", pl,
              static_cast<double>(*s.start_time));
    if (s.end_time)
      b.gauge("fsaudit_zfs_scan_end_timestamp_seconds", "End of the latest scan, finished or canceled (Unix time).",
              pl, static_cast<double>(*s.end_time));
    if (s.state == ScanState::finished) {
      g("fsaudit_zfs_scan_duration_seconds",
        "Duration of the latest finished scan as zpool status prints it (end - start, time paused included).",
        s.duration_seconds);
    }
    if (s.state != ScanState::none && s.state != ScanState::canceled) {
      g("fsaudit_zfs_scan_repaired_bytes",
        "Bytes repaired (scrub) or resilvered (resilver) by the latest scan, so far when running.", s.repaired_bytes);
      if (s.errors)
        b.gauge("fsaudit_zfs_scan_errors", "Errors the latest finished scan reported (\"with N errors\").", pl,
                static_cast<double>(*s.errors));
    }
    if (s.function == ScanFunction::scrub && s.state == ScanState::finished && s.end_time) {
      auto& m = memory[p.name];
      if (*s.end_time >= m.end_time) m = {*s.end_time, s.duration_seconds, s.repaired_bytes, s.errors};
    }
    if (auto it = memory.find(p.name); it != memory.end() && it->second.end_time > 0) {
      const auto& m = it->second;
      b.gauge("fsaudit_zfs_last_scrub_end_timestamp_seconds",
              "End of the pool's last finished scrub seen by this daemon (Unix time).", pl,
              static_cast<double>(m.end_time));
      g("fsaudit_zfs_last_scrub_duration_seconds",
        "Duration of the pool's last finished scrub as zpool status prints it (end - start, time paused included).",
        m.duration_seconds);
      g("fsaudit_zfs_last_scrub_repaired_bytes", "Bytes repaired by the pool's last finished scrub.", m.repaired_bytes);
      if (m.errors)
        b.gauge("fsaudit_zfs_last_scrub_errors", "Errors reported by the pool's last finished scrub.", pl,
                static_cast<double>(*m.errors));
    }
  }
  for (const auto& l : lists) {
    const metrics::Labels pl = {{"pool", l.name}};
    auto g = [&](const char* name, const char* help, const std::optional<double>& v) {
      if (v) b.gauge(name, help, pl, *v);
    };
    g("fsaudit_zfs_pool_size_bytes", "Pool size (zpool list SIZE).", l.size_bytes);
    g("fsaudit_zfs_pool_allocated_bytes", "Allocated bytes in the pool (zpool list ALLOC).", l.allocated_bytes);
    g("fsaudit_zfs_pool_fragmentation_ratio", "Free-space fragmentation of the pool (0..1).", l.fragmentation_ratio);
    if (!full_detail) continue;
    g("fsaudit_zfs_pool_free_bytes", "Free bytes in the pool (zpool list FREE).", l.free_bytes);
    g("fsaudit_zfs_pool_capacity_ratio", "Used fraction of the pool (zpool list CAP, 0..1).", l.capacity_ratio);
    g("fsaudit_zfs_pool_dedup_ratio", "Deduplication ratio of the pool.", l.dedup_ratio);
  }
  return b;
}

StatusFormat ZfsProbe::detected_format() const {
  std::lock_guard lk(mu_);
  return format_;
}

namespace {

CommandResult run_zpool(const std::string& zpool, const std::vector<std::string>& args, ProbeContext& ctx) {
  CommandSpec spec;
  spec.argv = {zpool};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = ctx.remaining();
  return ctx.runner.run(spec, ctx.stop);
}

}  // namespace

std::variant<ZfsProbe::StatusRead, ProbeResult> ZfsProbe::read_status(const std::string& zpool, ProbeContext& ctx) {
  auto stopped = [&] { return ctx.stop.stop_requested(); };
  StatusFormat fmt;
  {
    std::lock_guard lk(mu_);
    fmt = format_tool_ == zpool ? format_ : StatusFormat::unknown;
  }
  // Try the best format first; downgrade only on "invalid option" (cached).
  static const std::vector<std::pair<StatusFormat, std::vector<std::string>>> kTries = {
      {StatusFormat::json, {"status", "-jp"}}, {StatusFormat::text_p, {"status", "-p"}}, {StatusFormat::text, {"status"}}};
  CommandResult st;
  SteadyTime started{};
  bool got = false;
  for (const auto& [f, args] : kTries) {
    if (fmt != StatusFormat::unknown && f != fmt) continue;
    if (stopped()) return ProbeResult::failed("stopped before zpool status ran");
    started = ctx.clock.now();
    st = run_zpool(zpool, args, ctx);
    if (stopped()) return ProbeResult::failed("zpool status: " + st.describe());
    if (st.spawn_kind == ErrorKind::not_installed) return ProbeResult::not_applicable("no zpool tool: " + st.describe());
    if (!st.spawn_error.empty() || st.busy || st.timed_out) return ProbeResult::failed("zpool status: " + st.describe());
    if (says_no_zfs(st)) return ProbeResult::not_applicable("ZFS not available: " + st.describe());
    if (fmt == StatusFormat::unknown && rejected_option(st)) continue;
    if (fmt == StatusFormat::unknown && f == StatusFormat::json && st.ok()) {
      // Some builds accept -j but print text: make sure.
      if (!parse_zpool_status_json(st.out).ok()) continue;
    }
    fmt = f;
    got = true;
    break;
  }
  if (!got) return ProbeResult::failed("zpool status: no supported output format (" + st.describe() + ")");
  if (!st.ok()) {
    if (!st.truncated && says_no_pools(st)) return ProbeResult::not_applicable("no ZFS pools imported");
    return ProbeResult::failed("zpool status: " + st.describe());
  }
  {
    std::lock_guard lk(mu_);
    format_ = fmt;
    format_tool_ = zpool;
  }
  auto parsed = fmt == StatusFormat::json ? parse_zpool_status_json(st.out) : parse_zpool_status(st.out);
  if (!parsed) return ProbeResult::failed("zpool status: " + parsed.error());
  if (parsed->pools.empty()) {
    // Only zpool's own words mean "no pools": empty or unrecognised output is a tool misbehaving,
    // and reading it as "no pools" would silence every pool alert exactly then.
    if (parsed->no_pools || says_no_pools(st)) return ProbeResult::not_applicable("no ZFS pools imported");
    return ProbeResult::failed("zpool status " + std::string(to_string(fmt)) +
                               ": exit 0 but no pool and no 'no pools available' in the output (" +
                               std::to_string(st.out.size()) + " bytes)");
  }
  // A pool without its closing "errors:" line was cut short: the vdevs after the cut and the
  // data error count would read as "nothing wrong".
  for (const auto& p : parsed->pools)
    if (!p.complete)
      return ProbeResult::failed("zpool status: output ends before pool '" + p.name.substr(0, 80) +
                                 "' is complete (no 'errors:' line): cut short?");
  return StatusRead{std::move(*parsed), fmt, started};
}

ZfsProbe::ListRead ZfsProbe::read_lists(const std::string& zpool, const ZfsStatusReport& status, ProbeContext& ctx) {
  ListRead out;
  // zpool list: exact values with all columns where supported; older zpools (zfs-fuse, pool v23)
  // reject -p ("invalid option") and the fragmentation/dedupratio columns ("bad property list").
  static const std::vector<std::pair<std::vector<std::string>, const char*>> kListTries = {
      {{"list", "-Hp", "-o"}, kListColumns}, {{"list", "-H", "-o"}, kListColumns},
      {{"list", "-H", "-o"}, kListColumnsLegacy}};
  std::size_t first;
  bool kept = false;
  const auto list_started = ctx.clock.now();
  {
    std::lock_guard lk(mu_);
    first = list_format_tool_ == zpool ? list_format_ : 0;
    // Rows kept from a recent list, for the pools this status shows (an exported pool's row goes).
    if (lists_at_ && list_format_tool_ == zpool && *lists_at_ <= list_started && list_started - *lists_at_ < kPoolListMaxAge) {
      kept = true;
      for (const auto& p : status.pools) {
        auto row = std::find_if(lists_.begin(), lists_.end(), [&](const ZfsPoolList& r) { return r.name == p.name; });
        if (row == lists_.end()) {
          kept = false;
          break;
        }
        out.rows.push_back(*row);
      }
      if (!kept) out.rows.clear();
    }
  }
  // Kept rows: no list this run (the loop does not start).
  for (std::size_t i = kept ? kListTries.size() : first; i < kListTries.size(); ++i) {
    if (ctx.stop.stop_requested()) {
      out.problem = "stopped before zpool list ran";
      break;
    }
    auto args = kListTries[i].first;
    args.emplace_back(kListTries[i].second);
    auto lr = run_zpool(zpool, args, ctx);
    if (!lr.ok()) {
      out.problem = "zpool list: " + lr.describe();
      // Only a refused option/column makes the next, simpler form worth trying.
      if (lr.exited && !lr.timed_out && i + 1 < kListTries.size() && first == 0) continue;
      break;
    }
    auto pl = parse_zpool_list(lr.out, kListTries[i].second);
    if (!pl) {
      out.problem = "zpool list: " + pl.error();
      break;
    }
    out.rows = std::move(*pl);
    out.problem.clear();
    // A list cut at a row boundary parses fine: every pool zpool status showed needs its row.
    for (const auto& p : status.pools)
      if (std::none_of(out.rows.begin(), out.rows.end(), [&](const ZfsPoolList& r) { return r.name == p.name; })) {
        out.problem = "zpool list: no row for pool '" + p.name.substr(0, 80) + "' (output cut short?)";
        break;
      }
    std::lock_guard lk(mu_);
    list_format_ = i;
    list_format_tool_ = zpool;
    if (out.problem.empty()) {
      lists_ = out.rows;
      lists_at_ = list_started;
    }
    break;
  }
  if (!out.problem.empty()) {
    std::lock_guard lk(mu_);
    lists_at_.reset();  // the next run asks zpool again
  }
  return out;
}

ProbeResult ZfsProbe::run(const Target&, ProbeContext& ctx) {
  try {
    const std::string zpool = ctx.tool("zpool");
    auto read = read_status(zpool, ctx);
    if (auto* ended = std::get_if<ProbeResult>(&read)) return std::move(*ended);
    auto& status = std::get<StatusRead>(read);
    if (share_) share_->post(status.started, zpool, status.report);
    const ListRead lists = read_lists(zpool, status.report, ctx);
    metrics::Batch batch;
    {
      std::lock_guard lk(mu_);
      batch = build_zfs_metrics(status.report, lists.rows, status.format, scrubs_, full_detail_);
    }
    for (const char* from : {"vdev", "member"})
      batch = metrics::with_derived_label(batch, from, "disk", [&](const std::string& v) {
        const auto dev = member_device(ctx.host, v);
        return dev.empty() ? std::string() : block::disk_label(ctx.host, dev);
      });
    if (!lists.problem.empty()) return ProbeResult::failed(lists.problem, std::move(batch));
    return ProbeResult::ok(std::move(batch));
  } catch (const std::exception& e) {
    return ProbeResult::failed(std::string("zfs probe: ") + e.what());
  }
}

std::unique_ptr<Probe> make_zfs_probe(const config::Config& cfg, std::shared_ptr<StatusShare> share) {
  return std::make_unique<ZfsProbe>(std::move(share), cfg.zfs.full_detail());
}

void StatusShare::post(SteadyTime started, const std::string& zpool, const ZfsStatusReport& report) {
  std::lock_guard l(mu_);
  started_ = started;
  zpool_ = zpool;
  report_ = report;
}

std::optional<ZfsStatusReport> StatusShare::recent(SteadyTime now, SteadyTime::duration max_age,
                                                   const std::string& zpool) const {
  std::lock_guard l(mu_);
  if (!started_ || zpool_ != zpool || now - *started_ > max_age || *started_ > now) return std::nullopt;
  if (last_action_ && *started_ <= *last_action_) return std::nullopt;
  return report_;
}

void StatusShare::note_action(SteadyTime at) {
  std::lock_guard l(mu_);
  if (!last_action_ || at > *last_action_) last_action_ = at;
}

}  // namespace fsaudit::zfs
