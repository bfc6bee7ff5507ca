#include "probes/stack/model.hpp"

#include "daemon/core/strings.hpp"

namespace fsaudit::stack {

std::string_view to_string(Health h) {
  switch (h) {
    case Health::ok: return "ok";
    case Health::degraded: return "degraded";
    case Health::resilvering: return "resilvering";
    case Health::missing_members: return "missing_members";
    case Health::unknown: break;
  }
  return "unknown";
}

const std::vector<std::string>& health_states() {
  static const std::vector<std::string> s = {"ok", "degraded", "resilvering", "missing_members", "unknown"};
  return s;
}

std::string_view to_string(Expectation e) {
  switch (e) {
    case Expectation::repaired: return "repaired";
    case Expectation::detected: return "detected";
    case Expectation::blind: break;
  }
  return "blind";
}

Expectation StackModel::expectation() const {
  if (!data_checksums) return Expectation::blind;
  return repairs ? Expectation::repaired : Expectation::detected;
}

std::string normalize_layout(std::string_view fs, std::string_view layout) {
  std::string l = to_lower(layout);
  if (l == "raidz") return "raidz1";
  if (fs == "zfs" && (l == "stripe" || l == "disk" || l == "plain" || l == "file" || l.empty())) return "single";
  if ((fs == "xfs" || fs == "ext4") && (l == "single" || l.empty())) return "plain";
  if ((fs == "xfs" || fs == "ext4") && l.starts_with("lvm-raid")) return "lvm-raid";
  if (l.empty()) return "single";
  return l;
}

bool layout_matches(std::string_view fs, std::string_view configured, std::string_view actual) {
  if (fs != "btrfs" && fs != "zfs") return true;
  return normalize_layout(fs, configured) == normalize_layout(fs, actual);
}

StackModel plain_model(std::string fs, std::string name) {
  StackModel m;
  m.fs = std::move(fs);
  m.name = std::move(name);
  m.layout = "plain";
  m.copies = 1;
  m.data_checksums = false;
  // What lies below (md, LVM RAID) is not this filesystem's to report: member failures unknown.
  m.spare_copies = 0;
  m.health = Health::ok;
  return m;
}

}  // namespace fsaudit::stack
