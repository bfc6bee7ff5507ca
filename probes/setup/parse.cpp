#include "probes/setup/parse.hpp"
#include "daemon/core/fstype.hpp"

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::setup {

Result<PropertyTable> parse_property_table(std::string_view text) {
  PropertyTable t;
  bool header_seen = false;
  std::size_t rows = 0;
  for (auto raw : lines(text)) {
    if (trim(raw).empty()) continue;
    std::vector<std::string_view> f;
    if (raw.find('\t') != std::string_view::npos) {
      f = split(raw, '\t');
    } else {
      f = split_ws(raw);
      // The plain form: the header first, then whitespace-separated columns; a value never holds a
      // blank in the properties fsaudit reads (ashift, autotrim, capacity, ...).
      if (!header_seen) {
        if (f.size() >= 3 && f[0] == "NAME" && f[1] == "PROPERTY" && f[2] == "VALUE") {
          header_seen = true;
          continue;
        }
        return err("not a zfs/zpool get table (no tabs, no NAME PROPERTY VALUE header): \"" +
                   std::string(trim(raw).substr(0, 80)) + "\"");
      }
      if (f.size() > 4) {  // a value with blanks: everything between property and source
        std::string v;
        for (std::size_t i = 2; i + 1 < f.size(); ++i) v += (v.empty() ? "" : " ") + std::string(f[i]);
        t[std::string(f[0])][std::string(f[1])] = v;
        ++rows;
        continue;
      }
    }
    if (f.size() < 3) return err("zfs/zpool get row with " + std::to_string(f.size()) + " fields: \"" +
                                 std::string(trim(raw).substr(0, 80)) + "\"");
    t[std::string(f[0])][std::string(f[1])] = std::string(f[2]);
    ++rows;
  }
  if (rows == 0) return err("empty zfs/zpool get output");
  return t;
}

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
    if (v.depth != 0 || !data_role) continue;
    if (!v.leaf) {
      l.data_vdev_layouts.push_back(v.type.empty() ? "unknown" : v.type);
    } else {
      bool file = v.type == "file" || (!v.name.empty() && v.name[0] == '/' && !v.name.starts_with("/dev/"));
      l.data_vdev_layouts.push_back(file ? "file" : "disk");
    }
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
