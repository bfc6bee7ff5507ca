#include "probes/setup/parse.hpp"
#include "daemon/core/fstype.hpp"

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::setup {

std::optional<double> property_bytes(std::string_view v) {
  v = trim(v);
  if (v.empty() || v == "-" || v == "none") return std::nullopt;
  if (auto u = parse_u64(v)) return static_cast<double>(*u);
  auto h = parse_human_bytes(v);
  if (!h) return std::nullopt;
  return *h;
}

std::optional<double> property_percent(std::string_view v) {
  v = trim(v);
  if (v.ends_with('%')) v.remove_suffix(1);
  if (v.empty() || v == "-") return std::nullopt;
  return parse_double(v);
}

std::string normalize_fs(const std::string& fstype) { return std::string(fstype::canonical(fstype)); }

ZfsLayout zfs_layout(const zfs::ZfsPoolStatus& pool) {
  ZfsLayout l;
  for (const auto& v : pool.vdevs) {
    bool data_role = v.role == "data" || v.role == "special" || v.role == "dedup";
    if (v.leaf && (data_role || v.role == "log")) l.leaves.push_back(v.name);
  }
  return l;
}

Result<ObjsetIo> parse_objset_kstat(std::string_view text) {
  ObjsetIo o;
  bool header = false, name = false, w = false, nw = false;
  for (auto line : lines(text)) {
    auto f = split_ws(line);
    if (f.size() >= 3 && f[0] == "name" && f[1] == "type" && f[2] == "data") {
      header = true;
      continue;
    }
    if (!header || f.size() < 3) continue;
    // "<name> <type> <data>": type 7 is a string, 4 an unsigned 64-bit number.
    if (f[0] == "dataset_name") {
      o.dataset = std::string(f[2]);
      name = true;
    } else if (f[0] == "writes" && f[1] == "4") {
      if (auto v = parse_u64(f[2])) o.writes = *v, w = true;
    } else if (f[0] == "nwritten" && f[1] == "4") {
      if (auto v = parse_u64(f[2])) o.nwritten = *v, nw = true;
    }
  }
  if (!header) return err("not a kstat file (no \"name type data\" line)");
  if (!name || !w || !nw) return err("objset kstat without dataset_name, writes or nwritten");
  return o;
}

std::string zfs_pool_of(const std::string& dataset) {
  auto at = dataset.find('@');
  std::string d = dataset.substr(0, at);
  return d.substr(0, d.find('/'));
}

}  // namespace fsaudit::setup
