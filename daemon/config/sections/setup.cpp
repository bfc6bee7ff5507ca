#include "daemon/config/sections/setup.hpp"

#include "daemon/core/strings.hpp"

namespace fsaudit::config {

const std::vector<std::string>& stack_signature_fields() {
  static const std::vector<std::string> f = {"fs",          "data_checksums", "redundancy",      "compression",
                                             "kernel_release", "device_model", "device_transport"};
  return f;
}

bool SetupConfig::silenced(const std::string& target, const std::string& rule) const {
  for (const auto& s : silence) {
    if (!glob_match(s.target, target)) continue;
    if (s.rules.empty()) return true;
    for (const auto& r : s.rules)
      if (r == rule) return true;
  }
  return false;
}

bool SetupConfig::exempt(const std::string& target) const {
  for (const auto& g : coverage_exempt)
    if (glob_match(g, target)) return true;
  return false;
}

SetupConfig parse_setup(Section s) {
  SetupConfig c;
  for (auto e : s.list("silence")) {
    SetupSilence si;
    si.target = e.string("target", "");
    if (si.target.empty()) e.fail("target", "every silence entry needs 'target' (a glob over the target name, e.g. \"/scratch*\")");
    si.rules = e.strings("rules", {});
    e.finish();
    c.silence.push_back(std::move(si));
  }
  c.scrub_max_age = s.duration("scrub_max_age", c.scrub_max_age, std::chrono::hours(1), std::chrono::hours(24 * 366));
  c.zfs_fill_max_percent = s.number("zfs_fill_max", c.zfs_fill_max_percent, 1, 100);
  c.btrfs_unallocated_min = s.size("btrfs_unallocated_min", c.btrfs_unallocated_min);
  c.recordsize_factor = s.number("recordsize_factor", c.recordsize_factor, 1, 1024);
  Section n = s.section("nocow_scan");
  c.nocow_scan = n.boolean("enabled", c.nocow_scan);
  c.nocow_max_depth = static_cast<int>(n.integer("max_depth", c.nocow_max_depth, 0, 16));
  c.nocow_max_entries = static_cast<int>(n.integer("max_entries", c.nocow_max_entries, 1, 1000000));
  n.finish();
  Section cv = s.section("coverage");
  c.coverage_match = cv.strings("match", c.coverage_match);
  for (const auto& f : c.coverage_match) {
    bool known = false;
    for (const auto& k : stack_signature_fields()) known = known || k == f;
    if (!known)
      cv.fail("match", "unknown signature field \"" + f +
                           "\"; use some of fs, data_checksums, redundancy, compression, kernel_release, device_model, "
                           "device_transport");
  }
  c.coverage_grace = cv.duration("grace", c.coverage_grace, std::chrono::milliseconds(0), std::chrono::hours(24 * 31));
  c.coverage_exempt = cv.strings("exempt", c.coverage_exempt);
  cv.finish();
  c.detail = s.choice("detail", c.detail, {"compact", "full"});
  s.finish();
  return c;
}

}  // namespace fsaudit::config
