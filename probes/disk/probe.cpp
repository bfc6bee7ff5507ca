#include "probes/disk/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <iterator>

#include "daemon/core/helper_client.hpp"
#include "daemon/core/strings.hpp"
#include "probes/btrfs/probe.hpp"
#include "daemon/core/fstype.hpp"
#include "probes/disk/smart_verb.hpp"
#include "probes/zfs/members.hpp"

namespace fsaudit::disk {

namespace fs = std::filesystem;

std::string pool_of(const Target& t) {
  if (!fstype::is_zfs(t.fstype) || t.source.empty() || t.source.front() == '/') return "";
  return t.source.substr(0, t.source.find('/'));
}

std::vector<std::string> target_members(const HostPaths& host, const Target& t, const PoolMembers& pools,
                                        btrfs::SysfsMemo* memo) {
  if (auto pool = pool_of(t); !pool.empty()) {
    std::vector<std::string> out;
    if (auto it = pools.find(pool); it != pools.end())
      for (const auto& m : it->second)
        if (auto dev = zfs::member_device(host, m); !dev.empty()) out.push_back(dev);
    return out;
  }
  if (t.fstype == "btrfs") {
    // A btrfs over several devices names one of them as mount source; sysfs lists them all.
    if (auto fsid = btrfs::find_fsid(host, t.source, memo)) {
      std::vector<std::string> out;
      std::error_code ec;
      for (fs::directory_iterator it(host.sys("fs/btrfs/" + *fsid + "/devices"), ec), end; !ec && it != end;
           it.increment(ec))
        out.push_back(it->path().filename().string());
      if (!out.empty()) return out;
    }
  }
  if (t.source.starts_with("/dev/")) return {t.source};
  return {};
}

DiskTargets disks_of_targets(const HostPaths& host, const std::vector<Target>& targets, const PoolMembers& pools,
                             btrfs::SysfsMemo* memo) {
  // Each pool, mount source and member device is looked up once per pass: a pool's thousand
  // datasets, or a btrfs's subvolumes, share the same disks.
  std::map<std::string, std::vector<std::string>> disks_of_member;
  std::map<std::string, std::set<std::string>> disks_of_source;
  DiskTargets out;
  for (const auto& t : targets) {
    const auto pool = pool_of(t);
    const auto key = pool.empty() ? t.fstype + '\x1f' + t.source : "zfs\x1f" + pool;
    auto [at, fresh] = disks_of_source.try_emplace(key);
    if (fresh)
      for (const auto& m : target_members(host, t, pools, memo)) {
        auto [d, new_member] = disks_of_member.try_emplace(m);
        if (new_member) d->second = block::whole_disks(host, m);
        at->second.insert(d->second.begin(), d->second.end());
      }
    for (const auto& d : at->second) out[d].insert(t.name);
  }
  return out;
}

namespace {
std::string first_by_id(const block::DiskIdentity& id) {
  // The by-id link people read off the drive label: the bus+model+serial one before wwn-/nvme-eui.
  for (const auto& p : id.by_id) {
    auto n = fs::path(p).filename().string();
    if (!n.starts_with("wwn-") && !n.starts_with("nvme-eui.") && n.find("-part") == std::string::npos) return n;
  }
  return id.by_id.empty() ? "" : fs::path(id.by_id.front()).filename().string();
}
}  // namespace

metrics::Batch disk_metrics(const DiskTargets& disks, const std::map<std::string, block::DiskIdentity>& ids) {
  metrics::Batch b;
  for (const auto& [disk, targets] : disks) {
    auto it = ids.find(disk);
    block::DiskIdentity id = it == ids.end() ? block::DiskIdentity{disk, {}, {}, {}, {}, {}, {}} : it->second;
    b.info("fsaudit_disk_info",
           "A whole disk under a watched filesystem (value 1): model, serial, WWN, its /dev/disk/by-id name, "
           "bus, and for a loop device its backing file.",
           {{"disk", disk},
            {"model", id.model},
            {"serial", id.serial},
            {"wwn", id.wwn},
            {"by_id", first_by_id(id)},
            {"transport", id.transport},
            {"backing_file", id.backing_file}});
    for (const auto& t : targets)
      b.info("fsaudit_target_disk_info", "A whole disk the target's filesystem sits on (value 1).",
             {{"target", t}, {"disk", disk}});
  }
  return b;
}

void smart_metrics(metrics::Batch& b, const std::string& disk, const SmartReport& r) {
  const metrics::Labels l{{"disk", disk}};
  static const std::vector<std::string> kStates = {"ok", "standby", "unsupported", "failed"};
  static const char* const kStateNames[] = {"ok", "standby", "unsupported", "failed"};
  b.stateset("fsaudit_disk_smart_state",
             "How the last SMART read of the disk went (1 = current): ok, standby (asleep, not woken), "
             "unsupported (no SMART on this device), failed (smartctl failed; the probe says why).",
             l, kStates, kStateNames[static_cast<int>(r.state)]);
  if (r.state == SmartState::standby || r.state == SmartState::unsupported) return;
  if (r.passed) b.gauge("fsaudit_disk_smart_passed", "1 if the disk's SMART overall health self-assessment passed.", l, *r.passed ? 1 : 0);
  for (std::size_t i = 0; i < std::size(kSmartFindings); ++i) {
    bool set = std::find(r.bits.findings.begin(), r.bits.findings.end(), kSmartFindings[i]) != r.bits.findings.end();
    b.gauge("fsaudit_disk_smart_finding",
            "smartctl's exit status bits 3-7 (1 = set): failing, prefail_below_threshold, below_threshold_in_past, "
            "error_log_has_errors, self_test_log_has_errors.",
            {{"disk", disk}, {"finding", kSmartFindings[i]}}, set ? 1 : 0);
  }
  b.gauge("fsaudit_disk_at_risk",
          "1 if the disk's SMART says it may fail soon: failing status, reallocated/pending/offline-uncorrectable "
          "sectors, an NVMe critical warning or spare at its threshold, SCSI grown defects.",
          l, at_risk(r).empty() ? 0 : 1);
  auto g = [&](const char* name, const char* help, const auto& v, double scale = 1) {
    if (v) b.gauge(name, help, l, static_cast<double>(*v) * scale);
  };
  g("fsaudit_disk_ata_reallocated_sectors", "ATA attribute 5 (Reallocated_Sector_Ct), raw value.", r.reallocated_sectors);
  g("fsaudit_disk_ata_pending_sectors", "ATA attribute 197 (Current_Pending_Sector), raw value.", r.pending_sectors);
  g("fsaudit_disk_ata_offline_uncorrectable_sectors", "ATA attribute 198 (Offline_Uncorrectable), raw value.",
    r.offline_uncorrectable);
  g("fsaudit_disk_ata_udma_crc_errors", "ATA attribute 199 (UDMA_CRC_Error_Count), raw value: cable or connector trouble.",
    r.udma_crc_errors);
  if (r.critical_warning)
    for (std::size_t i = 0; i < std::size(kNvmeCriticalWarnings); ++i)
      b.gauge("fsaudit_disk_nvme_critical_warning", "NVMe SMART/Health critical warning bits (1 = set).",
              {{"disk", disk}, {"warning", kNvmeCriticalWarnings[i]}}, (*r.critical_warning >> i) & 1 ? 1 : 0);
  g("fsaudit_disk_nvme_media_errors", "NVMe media and data integrity errors (unrecovered).", r.media_errors);
  g("fsaudit_disk_nvme_available_spare_ratio", "NVMe available spare capacity (0-1).", r.available_spare, 0.01);
  g("fsaudit_disk_nvme_available_spare_threshold_ratio",
    "NVMe available spare threshold (0-1): at or below it the drive raises a critical warning.",
    r.available_spare_threshold, 0.01);
  g("fsaudit_disk_nvme_percentage_used_ratio", "NVMe estimate of life used (1 = rated endurance; may exceed 1).",
    r.percentage_used, 0.01);
  g("fsaudit_disk_scsi_grown_defects", "SCSI/SAS grown defect list length.", r.grown_defects);
  for (auto [op, v] : {std::pair{"read", r.uncorrected_read}, {"write", r.uncorrected_write}, {"verify", r.uncorrected_verify}})
    if (v)
      b.gauge("fsaudit_disk_scsi_uncorrected_errors", "SCSI/SAS error counter log: total uncorrected errors by operation.",
              {{"disk", disk}, {"operation", op}}, static_cast<double>(*v));
  g("fsaudit_disk_temperature_celsius", "Current disk temperature SMART reports.", r.temperature_celsius);
  g("fsaudit_disk_power_on_seconds", "Disk power-on time SMART reports (hours, as seconds).", r.power_on_hours, 3600);
  if (r.last_self_test_passed)
    b.gauge("fsaudit_disk_self_test_last_passed", "1 if the disk's newest self-test with a verdict passed.", l,
            *r.last_self_test_passed ? 1 : 0);
}

namespace {

constexpr const char* kNoDisks = "no watched filesystem sits on a block device";

// The disks under this cycle's watched filesystems; `problem` says which could not be found (a
// pool whose members zpool would not list), the others are there.
struct Watched {
  DiskTargets disks;
  std::string problem;
};

// The members of the watched datasets' pools: one `zpool status` of those pools.
PoolMembers pool_members(ProbeContext& ctx, const std::vector<Target>& targets, std::string& problem) {
  std::set<std::string> pools;
  for (const auto& t : targets)
    if (auto p = pool_of(t); !p.empty()) pools.insert(p);
  if (pools.empty()) return {};
  CommandSpec spec;
  spec.argv = {ctx.tool("zpool"), "status"};
  spec.argv.insert(spec.argv.end(), pools.begin(), pools.end());
  spec.timeout = ctx.remaining();
  auto r = ctx.runner.run(spec, ctx.stop);
  if (!r.ok()) {
    problem = "the disks under ZFS pools are unknown: zpool status: " + r.describe();
    return {};
  }
  auto st = zfs::parse_zpool_status(r.out);
  if (!st) {
    problem = "the disks under ZFS pools are unknown: zpool status: " + st.error();
    return {};
  }
  PoolMembers out;
  for (const auto& p : st->pools) {
    zfs::ZfsStatusReport one;
    one.pools.push_back(p);
    out[p.name] = zfs::leaf_members(one);
  }
  return out;
}

Result<Watched> watched_disks(ProbeContext& ctx, const TargetSelection& sel, btrfs::SysfsMemo& memo) {
  auto mounts = mount_table(ctx);
  if (!mounts) return err(mounts.error());
  auto targets = select_targets(**mounts, sel);
  Watched w;
  auto pools = pool_members(ctx, targets, w.problem);
  w.disks = disks_of_targets(ctx.host, targets, pools, &memo);
  return w;
}

class DiskProbe final : public Probe {
 public:
  explicit DiskProbe(TargetSelection sel) : selection_(std::move(sel)) {}
  std::string name() const override { return "disk"; }
  Scope scope() const override { return Scope::host; }
  // An inventory of the disks under every target: stretched with the probe budget (SMART is not).
  bool sweeps_targets() const override { return true; }
  ProbeResult run(const Target&, ProbeContext& ctx) override {
    auto w = watched(ctx);
    if (!w) return ProbeResult::failed(w.error());
    if (w->disks.empty() && w->problem.empty()) return ProbeResult::not_applicable(kNoDisks);
    std::map<std::string, block::DiskIdentity> ids;
    const auto links = block::by_id_links(ctx.host);
    std::set<std::string> names;
    for (const auto& [d, _] : w->disks) {
      ids[d] = identities_.identify(ctx.host, d, links);
      names.insert(d);
    }
    identities_.retain(names);
    auto b = disk_metrics(w->disks, ids);
    if (!w->problem.empty()) return ProbeResult::failed(w->problem, std::move(b));
    return ProbeResult::ok(std::move(b));
  }

 private:
  // The disks under the targets are walked again when the mount table changes (the daemon hands every
  // run the same snapshot until then), after a run that had a problem, and at least every kDisksRecheck
  // (an md or dm member swapped under a mount that stayed). Each walk reads sysfs for every mount
  // source: 9,000 loop devices were 12 % of the daemon's own CPU at 10,000 filesystems.
  Result<Watched> watched(ProbeContext& ctx) {
    const auto now = ctx.clock.now();
    auto table = mount_table(ctx);
    if (table && *table == last_table_ && now - last_at_ < kDisksRecheck) return last_;
    auto w = watched_disks(ctx, selection_, memo_);
    last_table_ = w && table && w->problem.empty() ? *table : nullptr;
    if (last_table_) {
      last_at_ = now;
      last_ = *w;
    }
    return w;
  }

  static constexpr auto kDisksRecheck = std::chrono::minutes(30);
  TargetSelection selection_;
  // Runs of one probe never overlap (host scope): no lock needed.
  btrfs::SysfsMemo memo_;
  block::IdentityCache identities_;
  MountSnapshot last_table_;  // the snapshot last_ was walked for; null: walk on the next run
  SteadyTime last_at_{};
  Watched last_;
};

// One disk's smartctl answer: its JSON and exit status, or why there is none.
struct SmartRead {
  std::string out;
  int exit = 0;
  std::string error;
};

class SmartProbe final : public Probe {
 public:
  SmartProbe(TargetSelection sel, std::string helper, config::SmartConfig cfg)
      : selection_(std::move(sel)), helper_(std::move(helper)), cfg_(cfg) {}
  std::string name() const override { return "smart"; }
  Scope scope() const override { return Scope::host; }
  ProbeResult run(const Target&, ProbeContext& ctx) override {
    auto watched = watched_disks(ctx, selection_, memo_);
    if (!watched) return ProbeResult::failed(watched.error());
    if (watched->disks.empty() && watched->problem.empty()) return ProbeResult::not_applicable(kNoDisks);
    const DiskTargets& disks = watched->disks;
    std::vector<std::string> todo;
    for (const auto& [d, _] : disks)
      if (!unsupported_.count(d)) todo.push_back(d);
    // smart.concurrency at a time (2 by default): enough to finish many disks within the run, few
    // enough that a slow bridge or controller is not asked for several disks at once.
    std::vector<SmartRead> reads(todo.size());
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i; (i = next++) < todo.size();) reads[i] = read_one(ctx, todo[i]);
    };
    {
      std::vector<std::jthread> workers;
      const auto n = std::min<std::size_t>(static_cast<std::size_t>(cfg_.concurrency), todo.size());
      for (std::size_t i = 0; i < n; ++i) workers.emplace_back(worker);
    }
    metrics::Batch batch;
    // The disks found without SMART before this run, as they were found (todo left them out).
    {
      SmartReport none;
      none.state = SmartState::unsupported;
      for (const auto& d : unsupported_)
        if (disks.count(d)) smart_metrics(batch, d, none);
    }
    std::set<std::string> risky;
    std::string why;
    auto fail = [&](const std::string& d, const std::string& w) { why += (why.empty() ? "" : "; ") + d + ": " + w; };
    for (std::size_t i = 0; i < todo.size(); ++i) {
      const auto& d = todo[i];
      if (!reads[i].error.empty()) {
        fail(d, reads[i].error);
        continue;
      }
      auto rep = parse_smartctl_json(reads[i].out, reads[i].exit);
      if (!rep) {
        fail(d, rep.error());
        continue;
      }
      if (rep->state == SmartState::unsupported) unsupported_.insert(d);
      if (rep->state == SmartState::standby) ++standby_skips_[d];
      if (rep->state == SmartState::failed) fail(d, rep->reason);
      if (!at_risk(*rep).empty()) risky.insert(d);
      smart_metrics(batch, d, *rep);
    }
    // Per filesystem: how many of the disks under it SMART says may fail soon.
    std::map<std::string, int> at_risk_per_target;
    for (const auto& [d, targets] : disks)
      for (const auto& t : targets) at_risk_per_target[t] += risky.count(d) ? 1 : 0;
    for (const auto& [t, n] : at_risk_per_target) {
      // Only while some are (issue 33's budget): the alert asks for > 0, and the disks under each
      // filesystem (fsaudit_target_disk_info) with their fsaudit_disk_at_risk say 0 already.
      if (n > 0)
        batch.gauge("fsaudit_members_at_risk",
                    "Disks under the filesystem whose SMART says they may fail soon (fsaudit_disk_at_risk == 1); "
                    "absent while none is.",
                    {{"target", t}}, n);
      batch.status.fs(t).members_at_risk = n;
    }
    for (const auto& [d, _] : disks)
      batch.counter("fsaudit_disk_smart_skipped_standby_total",
                    "SMART reads skipped because the disk was asleep (smartctl -n standby does not wake it).",
                    {{"disk", d}}, static_cast<double>(standby_skips_.count(d) ? standby_skips_.at(d) : 0));
    if (!watched->problem.empty()) why = watched->problem + (why.empty() ? "" : "; " + why);
    if (!why.empty()) return ProbeResult::failed(why, std::move(batch));
    return ProbeResult::ok(std::move(batch));
  }

 private:
  SmartRead read_one(ProbeContext& ctx, const std::string& disk) {
    auto timeout = std::max(std::chrono::milliseconds(100),
                            std::min<std::chrono::milliseconds>(cfg_.call_timeout, ctx.remaining()));
    if (!helper_.empty() && ::geteuid() != 0) {
      auto h = helper_call(helper_, kSmartVerb, {{"disk", disk}}, timeout + std::chrono::seconds(5));
      if (!h) return {"", 0, h.error()};
      return {(*h)["out"], std::atoi((*h)["exit"].c_str()), ""};
    }
    if (auto disk_ok = check_smart_disk(ctx.host, disk); !disk_ok) return {"", 0, disk_ok.error()};
    CommandSpec spec;
    spec.argv = smartctl_argv(ctx.tool("smartctl"), disk);
    spec.timeout = timeout;
    spec.max_output = 4 << 20;
    auto r = ctx.runner.run(spec, ctx.stop);
    if (r.timed_out) return {"", 0, "smartctl killed after " + std::to_string(timeout.count()) + " ms without an answer (hung device?)"};
    if (!r.exited || r.truncated) return {"", 0, "smartctl: " + r.describe()};
    return {r.out, r.exit_code, ""};
  }

  TargetSelection selection_;
  std::string helper_;
  config::SmartConfig cfg_;
  // Runs of one probe never overlap (host scope): no lock needed. Names only: a disk without SMART
  // says nothing but that (its series is the state alone), and a kept report per device was 540 bytes
  // each (issue 33: 9,000 loop devices).
  std::set<std::string> unsupported_;
  std::map<std::string, std::uint64_t> standby_skips_;
  btrfs::SysfsMemo memo_;
};

}  // namespace

std::unique_ptr<Probe> make_disk_probe(const config::Config& cfg) {
  return std::make_unique<DiskProbe>(cfg.watched_targets());
}

std::unique_ptr<Probe> make_smart_probe(const config::Config& cfg) {
  return std::make_unique<SmartProbe>(cfg.watched_targets(), cfg.canary.helper, cfg.smart);
}

}  // namespace fsaudit::disk
