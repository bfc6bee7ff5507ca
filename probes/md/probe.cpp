#include "probes/md/probe.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::md {

namespace fs = std::filesystem;

namespace {

bool is_array_header(std::string_view line) {
  // "md0 : active raid1 ..." (names: md<N>, md_<name>, md<N>p<M> is never listed)
  if (!line.starts_with("md")) return false;
  auto p = line.find(" : ");
  return p != std::string_view::npos && line.substr(0, p).find(' ') == std::string_view::npos;
}

std::optional<Member> parse_member(std::string_view tok) {
  auto open = tok.find('[');
  auto close = tok.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos || open == 0) return std::nullopt;
  Member m;
  m.name = std::string(tok.substr(0, open));
  auto slot = parse_u64(tok.substr(open + 1, close - open - 1));
  if (!slot) return std::nullopt;
  m.slot = static_cast<int>(*slot);
  auto flags = tok.substr(close + 1);
  for (size_t i = 0; i + 2 < flags.size() + 1; ++i) {
    if (flags[i] != '(' || i + 2 >= flags.size() || flags[i + 2] != ')') continue;
    switch (flags[i + 1]) {
      case 'F': m.faulty = true; break;
      case 'S': m.spare = true; break;
      case 'W': m.write_mostly = true; break;
      case 'J': m.journal = true; break;
      case 'R': m.replacement = true; break;
      default: break;
    }
  }
  return m;
}

// "[=>...]  recovery =  8.5% (166106112/1953382464) finish=166.5min speed=178832K/sec"
std::optional<SyncProgress> parse_progress(std::string_view line) {
  static const char* const actions[] = {"resync", "recovery", "check", "repair", "reshape", "recover"};
  auto eq = line.find(" =");
  if (eq == std::string_view::npos) return std::nullopt;
  auto before = trim(line.substr(0, eq));
  auto ws_before = split_ws(before);
  if (ws_before.empty()) return std::nullopt;
  auto action = ws_before.back();
  bool known = false;
  for (const auto* a : actions) known = known || action == a;
  if (!known) return std::nullopt;
  SyncProgress p;
  p.action = std::string(action);
  auto rest = split_ws(line.substr(eq + 2));
  for (auto tok : rest) {
    if (tok.ends_with("%")) {
      if (auto v = parse_double(tok.substr(0, tok.size() - 1))) p.ratio = *v / 100.0;
    } else if (tok.starts_with("(") && tok.ends_with(")")) {
      auto inner = tok.substr(1, tok.size() - 2);
      auto slash = inner.find('/');
      if (slash != std::string_view::npos) {
        p.done_kib = parse_u64(inner.substr(0, slash)).value_or(0);
        p.total_kib = parse_u64(inner.substr(slash + 1)).value_or(0);
      }
    } else if (tok.starts_with("finish=") && tok.ends_with("min")) {
      if (auto v = parse_double(tok.substr(7, tok.size() - 10))) p.finish_seconds = *v * 60;
    } else if (tok.starts_with("speed=") && tok.ends_with("K/sec")) {
      if (auto v = parse_double(tok.substr(6, tok.size() - 11))) p.speed_bytes_per_second = *v * 1024;
    }
  }
  return p;
}

void parse_detail_line(std::string_view line, Array& a) {
  auto ws = split_ws(line);
  if (ws.size() >= 2 && ws[1] == "blocks") {
    a.blocks_kib = parse_u64(ws[0]);
    for (size_t i = 2; i < ws.size(); ++i) {
      if (ws[i] == "super" && i + 1 < ws.size()) a.super_version = std::string(ws[i + 1]);
      auto tok = ws[i];
      if (tok.size() >= 3 && tok.front() == '[' && tok.back() == ']') {
        auto inner = tok.substr(1, tok.size() - 2);
        auto slash = inner.find('/');
        if (slash != std::string_view::npos) {
          auto e = parse_u64(inner.substr(0, slash));
          auto act = parse_u64(inner.substr(slash + 1));
          if (e && act) {
            a.disks_expected = static_cast<int>(*e);
            a.disks_active = static_cast<int>(*act);
          }
        } else if (std::all_of(inner.begin(), inner.end(), [](char c) { return c == 'U' || c == '_'; })) {
          a.status_map = std::string(inner);
        }
      }
    }
    return;
  }
  auto t = trim(line);
  for (const auto* pend : {"resync=", "reshape=", "recovery="}) {
    if (t.starts_with(pend)) {
      a.sync_pending = std::string(t.substr(std::string_view(pend).size()));
      return;
    }
  }
  if (t.starts_with("[") || t.find(" = ") != std::string_view::npos || t.find(" =") != std::string_view::npos) {
    if (auto p = parse_progress(t)) a.sync = p;
  }
}

std::optional<std::string> read_trimmed(const fs::path& p) {
  auto r = read_file(p, 4096);
  if (!r) return std::nullopt;
  return std::string(trim(*r));
}

}  // namespace

Result<Mdstat> parse_mdstat(std::string_view text) {
  Mdstat s;
  bool seen_header = false;
  bool seen_end = false;  // md_seq_show ends every read with "unused devices: ..."
  Array* cur = nullptr;
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    if (line.empty()) {
      cur = nullptr;
      continue;
    }
    if (line.starts_with("Personalities :") || line.starts_with("Personalities:")) {
      seen_header = true;
      for (auto tok : split_ws(line.substr(line.find(':') + 1)))
        if (tok.size() > 2 && tok.front() == '[' && tok.back() == ']')
          s.personalities.emplace_back(tok.substr(1, tok.size() - 2));
      continue;
    }
    if (line.starts_with("unused devices:")) {
      // md_seq_show prints "<none>" or one "name " per spare-less device, then a newline: anything
      // else, or the line without its newline, is a cut ("unused dev", "<no", "sdb1 sd").
      auto list = trim(line.substr(15));
      bool whole = text.find('\n', static_cast<std::size_t>(raw.data() - text.data())) != std::string_view::npos;
      if (!whole || list.empty() || (list.find('<') != std::string_view::npos && list != "<none>"))
        return err("the 'unused devices:' end line is cut short: '" + std::string(line.substr(0, 80)) + "'");
      seen_header = true;
      seen_end = true;
      cur = nullptr;
      continue;
    }
    if (is_array_header(line)) {
      seen_header = true;
      Array a;
      auto p = line.find(" : ");
      a.name = std::string(line.substr(0, p));
      auto toks = split_ws(line.substr(p + 3));
      size_t i = 0;
      if (i < toks.size() && toks[i] == "active") a.active = true;
      if (i < toks.size() && (toks[i] == "active" || toks[i] == "inactive")) ++i;
      for (; i < toks.size(); ++i) {
        if (toks[i] == "(read-only)") a.read_only = true;
        else if (toks[i] == "(auto-read-only)") a.auto_read_only = true;
        else break;
      }
      if (a.active && i < toks.size() && toks[i].find('[') == std::string_view::npos) a.level = std::string(toks[i++]);
      for (; i < toks.size(); ++i)
        if (auto m = parse_member(toks[i])) a.members.push_back(std::move(*m));
      s.arrays.push_back(std::move(a));
      cur = &s.arrays.back();
      continue;
    }
    if (cur) parse_detail_line(raw, *cur);
  }
  if (!seen_header) {
    auto ls = lines(text);
    return err("not /proc/mdstat content" +
               (ls.empty() ? std::string(" (empty)") : ": '" + std::string(trim(ls.front()).substr(0, 80)) + "'"));
  }
  if (!seen_end)
    return err("no 'unused devices:' line at the end: the content is cut short, arrays after the cut would be missed");
  return s;
}

SysfsArray read_sysfs_array(const fs::path& md) {
  SysfsArray a;
  a.array_state = read_trimmed(md / "array_state").value_or("");
  if (auto v = read_trimmed(md / "degraded")) a.degraded = parse_u64(*v);
  a.sync_action = read_trimmed(md / "sync_action").value_or("");
  if (auto v = read_trimmed(md / "mismatch_cnt")) a.mismatch_cnt = parse_u64(*v);
  a.level = read_trimmed(md / "level").value_or("");
  if (auto v = read_trimmed(md / "raid_disks")) a.raid_disks = parse_u64(*v);
  if (auto v = read_trimmed(md / "sync_completed")) {
    // "none" or "123 / 456" (sectors)
    auto parts = split(*v, '/');
    if (parts.size() == 2) {
      auto d = parse_u64(trim(parts[0]));
      auto t = parse_u64(trim(parts[1]));
      if (d && t) a.sync_completed = std::make_pair(*d, *t);
    }
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
    if (s && !s->array_state.empty()) {
      auto states = kArrayStates;
      if (std::find(states.begin(), states.end(), s->array_state) == states.end()) states.push_back(s->array_state);
      b.stateset("fsaudit_md_array_state", "md array_state from sysfs (clean, active, degraded arrays stay clean/active; "
                 "broken = too many members lost).", l, states, s->array_state);
    }
    std::string action;
    if (s && !s->sync_action.empty()) action = s->sync_action;
    else if (a && a->active && !level.starts_with("raid0") && level != "linear")
      action = a->sync ? (a->sync->action == "recovery" ? "recover" : a->sync->action) : "idle";
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

}  // namespace fsaudit::md

namespace fsaudit::probes {

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
      if (!std::filesystem::exists(path, ec))
        return ProbeResult::not_applicable(path.string() + " does not exist: the md driver is not loaded");
      auto text = read_file(path);
      if (!text) return ProbeResult::failed(text.error());
      auto parsed = md::parse_mdstat(*text);
      if (!parsed) return ProbeResult::failed(path.string() + ": " + parsed.error());
      o.mdstat = std::move(*parsed);
      for (std::filesystem::directory_iterator it(ctx.host.sys("block"), ec), end; !ec && it != end; it.increment(ec)) {
        auto n = it->path().filename().string();
        std::error_code ec2;
        if (n.starts_with("md") && std::filesystem::is_directory(it->path() / "md", ec2))
          o.sysfs[n] = md::read_sysfs_array(it->path() / "md");
      }
      return ProbeResult::ok(md::md_metrics(o));
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("md probe: ") + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Probe> make_md_probe(const config::Config&) { return std::make_unique<MdProbe>(); }

}  // namespace fsaudit::probes
