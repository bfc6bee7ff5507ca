#include "probes/md/probe.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

#include "daemon/config/config.hpp"
#include "daemon/core/disk_identity.hpp"
#include "daemon/metrics/derive_label.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::md {

namespace fs = std::filesystem;

SysfsArray read_sysfs_array(const fs::path& md, const AttributeReader& read) {
  SysfsArray a;
  auto text = [&](const char* name) -> std::string {
    auto r = read(md / name).optional_text();
    if (!r) a.problems.push_back(r.error());
    return r && *r ? std::string(trim(**r)) : std::string();
  };
  auto number = [&](const char* name) -> std::optional<std::uint64_t> {
    auto r = read_u64(read(md / name));
    if (!r) a.problems.push_back(r.error());
    return r ? *r : std::nullopt;
  };
  a.array_state = text("array_state");
  a.degraded = number("degraded");
  a.sync_action = text("sync_action");
  a.mismatch_cnt = number("mismatch_cnt");
  a.level = text("level");
  a.raid_disks = number("raid_disks");
  auto done = text("sync_completed");
  if (!done.empty() && done != "none" && done != "delayed") {
    // "123 / 456" (sectors)
    auto parts = split(done, '/');
    std::optional<std::uint64_t> d, t;
    if (parts.size() == 2) d = parse_u64(trim(parts[0])), t = parse_u64(trim(parts[1]));
    if (d && t) a.sync_completed = std::make_pair(*d, *t);
    else a.problems.push_back((md / "sync_completed").string() + " is '" + done.substr(0, 40) + "', not 'done / total'");
  }
  return a;
}

metrics::Batch md_metrics(const Observation& o) {
  metrics::Batch b;
  static const std::vector<std::string> kArrayStates = {"clear", "inactive", "suspended", "readonly",  "read-auto",
                                                        "clean", "active",   "write-pending", "active-idle", "broken"};
  static const std::vector<std::string> kSyncActions = {"idle", "resync", "recover", "check", "repair", "reshape", "frozen"};
  std::map<std::string, const Array*> from_mdstat;
  if (o.mdstat)
    for (const auto& a : o.mdstat->arrays) from_mdstat[a.name] = &a;
  std::set<std::string> names;
  for (const auto& [n, _] : from_mdstat) names.insert(n);
  for (const auto& [n, _] : o.sysfs) names.insert(n);

  for (const auto& name : names) {
    metrics::Labels l{{"device", name}};
    const Array* a = from_mdstat.count(name) ? from_mdstat[name] : nullptr;
    const SysfsArray* s = o.sysfs.count(name) ? &o.sysfs.at(name) : nullptr;
    std::string level = s && !s->level.empty() ? s->level : (a ? a->level : "");
    b.info("fsaudit_md_array_info", "md array (value 1): RAID level and metadata version.",
           {{"device", name}, {"level", level}, {"super", a ? a->super_version : ""}});
    if (a) {
      b.gauge("fsaudit_md_array_active", "1 if the md array is active (running), 0 if inactive (/proc/mdstat).", l,
              a->active ? 1 : 0);
      if (a->disks_expected) {
        b.gauge("fsaudit_md_disks", "md array member slots: expected (raid disks) and active (in sync), from [n/m].",
                {{"device", name}, {"state", "expected"}}, *a->disks_expected);
        b.gauge("fsaudit_md_disks", "md array member slots: expected (raid disks) and active (in sync), from [n/m].",
                {{"device", name}, {"state", "active"}}, *a->disks_active);
      }
      for (const auto& m : a->members) {
        metrics::Labels ml{{"device", name}, {"member", m.name}};
        b.gauge("fsaudit_md_member_faulty", "1 if the md member device is marked faulty (F) in /proc/mdstat.", ml,
                m.faulty ? 1 : 0);
        b.gauge("fsaudit_md_member_spare", "1 if the md member device is a spare (S) in /proc/mdstat.", ml,
                m.spare ? 1 : 0);
      }
      if (a->sync) {
        b.gauge("fsaudit_md_sync_progress_ratio", "Progress of the running md resync/recovery/check/repair/reshape.",
                {{"device", name}, {"action", a->sync->action}}, a->sync->ratio);
        if (a->sync->finish_seconds)
          b.gauge("fsaudit_md_sync_remaining_seconds", "The kernel's estimate of the time left for the md sync.", l,
                  *a->sync->finish_seconds);
        if (a->sync->speed_bytes_per_second)
          b.gauge("fsaudit_md_sync_speed_bytes_per_second", "Current md sync speed.", l,
                  *a->sync->speed_bytes_per_second);
      }
    }
    std::optional<double> degraded;
    if (s && s->degraded) degraded = static_cast<double>(*s->degraded);
    else if (a && a->disks_expected && a->disks_active) degraded = *a->disks_expected - *a->disks_active;
    if (degraded)
      b.gauge("fsaudit_md_degraded", "Number of missing or failed member devices of the md array (0 = complete).", l,
              *degraded);
    if (degraded && *degraded > 0) {  // the page joins it to the filesystem on /dev/<name>
      metrics::FsFacts f;
      f.device = name;
      f.fs = "md";
      f.problems.push_back({metrics::Severity::critical,
                            "md array " + name + " is degraded: " + std::to_string(static_cast<long long>(*degraded)) +
                                " member(s) missing or failed",
                            "FsauditMdArrayDegraded"});
      b.status.filesystems.push_back(std::move(f));
    }
    if (s && !s->array_state.empty()) {
      auto states = kArrayStates;
      if (std::find(states.begin(), states.end(), s->array_state) == states.end()) states.push_back(s->array_state);
      b.stateset("fsaudit_md_array_state", "md array_state from sysfs (clean, active, degraded arrays stay clean/active; "
                 "broken = too many members lost).", l, states, s->array_state);
    }
    std::string action;
    if (s && !s->sync_action.empty()) action = s->sync_action;
    else if (a && a->active && !level.starts_with("raid0") && level != "linear")
      action = md::mdstat_sync_action(*a);
    if (!action.empty()) {
      auto actions = kSyncActions;
      if (std::find(actions.begin(), actions.end(), action) == actions.end()) actions.push_back(action);
      b.stateset("fsaudit_md_sync_action", "What the md array's sync thread is doing (sysfs sync_action).", l, actions,
                 action);
    }
    if (s && s->mismatch_cnt)
      b.gauge("fsaudit_md_mismatch_sectors",
              "Sectors the last md check/repair found inconsistent between copies/parity (mismatch_cnt). md cannot "
              "tell which copy is right.",
              l, static_cast<double>(*s->mismatch_cnt));
  }
  b.gauge("fsaudit_md_arrays", "Number of md arrays on the host.", {}, static_cast<double>(names.size()));
  return b;
}


namespace {

class MdProbe final : public Probe {
 public:
  std::string name() const override { return "md"; }
  Scope scope() const override { return Scope::host; }
  ProbeResult run(const Target&, ProbeContext& ctx) override {
    try {
      md::Observation o;
      auto path = ctx.host.proc("mdstat");
      std::error_code ec;
      auto read = read_attribute(path, 16 << 20, /*whole_file=*/true);
      if (read.absent())
        return ProbeResult::not_applicable(path.string() + " does not exist: the md driver is not loaded");
      if (!read.ok()) return ProbeResult::failed(read.reason());
      auto parsed = md::parse_mdstat_until_cut(read.text);
      if (!parsed) return ProbeResult::failed(path.string() + ": " + parsed.error());
      // Content cut short still shows the arrays that were whole before the cut: they are
      // published, and the probe fails for the rest.
      std::string why = parsed->cut.empty() ? std::string() : path.string() + ": " + parsed->cut;
      o.mdstat = std::move(parsed->mdstat);
      for (std::filesystem::directory_iterator it(ctx.host.sys("block"), ec), end; !ec && it != end; it.increment(ec)) {
        auto n = it->path().filename().string();
        std::error_code ec2;
        if (n.starts_with("md") && std::filesystem::is_directory(it->path() / "md", ec2)) {
          o.sysfs[n] = md::read_sysfs_array(it->path() / "md");
          for (const auto& p : o.sysfs[n].problems) why += (why.empty() ? "" : "; ") + p;
        }
      }
      auto b = md::md_metrics(o);
      // A member's disk first: the array's own (all its members' disks) goes only where no member is named.
      for (const char* from : {"member", "device"})
        b = metrics::with_derived_label(b, from, "disk", [&](const std::string& d) { return block::disk_label(ctx.host, d); });
      if (!why.empty()) return ProbeResult::failed(why, std::move(b));
      return ProbeResult::ok(std::move(b));
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("md probe: ") + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Probe> make_md_probe(const config::Config&) { return std::make_unique<MdProbe>(); }

}  // namespace fsaudit::md
