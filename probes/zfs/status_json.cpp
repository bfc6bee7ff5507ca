// `zpool status -j` (OpenZFS 2.3+), parsed with nlohmann::json. ordered_json keeps zpool's order.
#include <nlohmann/json.hpp>

#include <cmath>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

namespace {

using json = nlohmann::ordered_json;

// Numbers arrive as ints (--json-int), exact strings ("254976", with -p) or human strings ("3.62T").
std::optional<double> num(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (!it->is_string()) return std::nullopt;
  auto s = trim(it->get_ref<const std::string&>());
  if (auto u = parse_u64(s)) return static_cast<double>(*u);
  if (auto d = parse_double(s)) return *d;
  if (s.empty() || !(s[0] >= '0' && s[0] <= '9')) return std::nullopt;
  auto h = parse_human_bytes(s);
  if (!h) return std::nullopt;
  return *h;
}

std::optional<std::uint64_t> unum(const json& o, const char* key) {
  auto v = num(o, key);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(*v));
}

std::string str(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return "";
}

// A time is an epoch (int or digit string, with -p) or a printed date (without -p).
std::optional<std::int64_t> when(const json& o, const char* key, ScanTimeZone tz) {
  auto it = o.find(key);
  if (it == o.end()) return std::nullopt;
  if (it->is_number()) return it->get<std::int64_t>();
  if (!it->is_string()) return std::nullopt;
  const auto& s = it->get_ref<const std::string&>();
  if (auto v = parse_i64(trim(s))) return *v;
  return parse_zpool_date(s, tz);
}

ZfsScan scan_from_json(const json& ss, ScanTimeZone tz) {
  ZfsScan s;
  s.text = ss.dump();
  s.recognized = true;
  auto fn = to_lower(str(ss, "function"));
  if (fn == "scrub") s.function = ScanFunction::scrub;
  else if (fn == "resilver") s.function = ScanFunction::resilver;
  else if (fn == "errorscrub" || fn == "error_scrub") s.function = ScanFunction::error_scrub;
  auto st = to_lower(str(ss, "state"));
  if (st == "scanning") s.state = ScanState::in_progress;
  else if (st == "finished") s.state = ScanState::finished;
  else if (st == "canceled") s.state = ScanState::canceled;
  else if (st != "none" && !st.empty()) s.recognized = false;
  if (s.state == ScanState::in_progress) {
    auto pause = str(ss, "scrub_pause");
    auto pv = num(ss, "scrub_pause");
    if (!pause.empty() && pause != "-" && pause != "none" && !(pv && *pv == 0)) s.state = ScanState::paused;
  }
  s.start_time = when(ss, "start_time", tz);
  if (s.state == ScanState::finished || s.state == ScanState::canceled) s.end_time = when(ss, "end_time", tz);
  // The duration zpool status prints ("in %s" = end - start, paused time included), so the text and
  // the JSON of one scrub give one number. scrub_spent_paused is not subtracted or exported: it counts
  // only the current pass and lives in memory, so after a reboot or re-import it reads 0 for a scrub
  // that was paused.
  if (s.state == ScanState::finished && s.start_time && s.end_time && *s.end_time >= *s.start_time)
    s.duration_seconds = static_cast<double>(*s.end_time - *s.start_time);
  s.total_bytes = num(ss, "to_examine");
  s.examined_bytes = num(ss, "examined");
  s.issued_bytes = num(ss, "issued");
  s.repaired_bytes = num(ss, "processed");
  s.errors = unum(ss, "errors");
  if (s.state == ScanState::in_progress || s.state == ScanState::paused) {
    auto skipped = num(ss, "skipped").value_or(0);
    if (s.total_bytes && s.issued_bytes && *s.total_bytes - skipped > 0)
      s.progress_ratio = std::min(1.0, *s.issued_bytes / (*s.total_bytes - skipped));
  } else if (s.state == ScanState::finished) {
    s.progress_ratio = 1.0;
  }
  return s;
}

void add_vdev(const json& v, const std::string& name, const std::string& parent, const std::string& role,
              int depth, ZfsPoolStatus& p) {
  ZfsVdev out;
  out.name = v.contains("name") ? str(v, "name") : name;
  out.parent = parent;
  auto cls = str(v, "class");
  out.role = role;
  if (cls == "special" || cls == "dedup") out.role = cls;
  out.type = str(v, "vdev_type");
  out.depth = depth;
  out.state = str(v, "state");
  out.read_errors = unum(v, "read_errors");
  out.write_errors = unum(v, "write_errors");
  out.checksum_errors = unum(v, "checksum_errors");
  auto kids = v.find("vdevs");
  out.leaf = kids == v.end() || !kids->is_object() || kids->empty();
  if ((out.type == "raidz" || out.type == "draid") && !out.leaf) {
    // JSON says "raidz"; the parity level is in nparity (when present) or the vdev's id name.
    if (auto par = unum(v, "nparity")) {
      out.type += std::to_string(*par);
    } else if (out.name.size() > out.type.size() && out.name.starts_with(out.type) &&
               out.name[out.type.size()] >= '1' && out.name[out.type.size()] <= '3') {
      out.type += out.name[out.type.size()];
    }
  }
  std::string me = out.name;
  p.vdevs.push_back(std::move(out));
  if (kids != v.end() && kids->is_object())
    for (auto& [k, child] : kids->items()) add_vdev(child, k, me, role, depth + 1, p);
}

}  // namespace

Result<ZfsStatusReport> parse_zpool_status_json(std::string_view text, ScanTimeZone tz) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return err("zpool status -j: output is not valid JSON");
  if (!doc.is_object()) return err("zpool status -j: top level is not an object");
  ZfsStatusReport rep;
  auto pools = doc.find("pools");
  // zpool -j always prints its output_version; an object without it is not zpool's, and an empty
  // one ("{}") would otherwise read as "no pools".
  if (!doc.contains("output_version") && (pools == doc.end() || pools->is_null() || pools->empty()))
    return err("zpool status -j: neither pools nor output_version in the JSON: not zpool status output");
  if (pools == doc.end() || pools->is_null() || (pools->is_object() && pools->empty())) {
    rep.no_pools = true;
    return rep;
  }
  if (!pools->is_object()) return err("zpool status -j: 'pools' is not an object");
  for (auto& [pname, pj] : pools->items()) {
    if (!pj.is_object()) return err("zpool status -j: pool '" + pname.substr(0, 80) + "' is not an object");
    // An imported ONLINE/DEGRADED pool always has its vdev tree; only a pool whose configuration
    // cannot be read (FAULTED, UNAVAIL) may come without one.
    auto pstate = str(pj, "state");
    auto vdevs_it = pj.find("vdevs");
    bool has_tree = vdevs_it != pj.end() && vdevs_it->is_object() && !vdevs_it->empty();
    ZfsPoolStatus p;
    p.name = pj.contains("name") ? str(pj, "name") : pname;
    p.state = str(pj, "state");
    p.status = str(pj, "msgid").empty() ? str(pj, "status") : str(pj, "status") + " " + str(pj, "msgid");
    p.action = str(pj, "action");
    p.see = str(pj, "moreinfo");
    p.data_errors = unum(pj, "error_count");
    if (auto ss = pj.find("scan_stats"); ss != pj.end() && ss->is_object()) {
      p.has_scan = true;
      p.scan = scan_from_json(*ss, tz);
    }
    if (auto vd = pj.find("vdevs"); vd != pj.end() && vd->is_object()) {
      for (auto& [rname, root] : vd->items()) {
        if (str(root, "vdev_type") == "root" || rname == p.name) {
          p.root_state = str(root, "state");
          p.read_errors = unum(root, "read_errors");
          p.write_errors = unum(root, "write_errors");
          p.checksum_errors = unum(root, "checksum_errors");
          if (auto kids = root.find("vdevs"); kids != root.end() && kids->is_object())
            for (auto& [k, child] : kids->items()) add_vdev(child, k, "", "data", 0, p);
        } else {
          add_vdev(root, rname, "", "data", 0, p);
        }
      }
    }
    for (auto [section, role] : {std::pair{"special", "special"}, {"dedup", "dedup"}, {"logs", "log"},
                                 {"l2cache", "cache"}, {"spares", "spare"}}) {
      auto it = pj.find(section);
      if (it == pj.end() || !it->is_object()) continue;
      for (auto& [k, v] : it->items()) add_vdev(v, k, "", role, 0, p);
    }
    // A document that parses is whole, but a pool object may still lack its tree.
    p.complete = has_tree || !pool_prints_error_count(pstate);
    rep.pools.push_back(std::move(p));
  }
  return rep;
}

}  // namespace fsaudit::zfs
