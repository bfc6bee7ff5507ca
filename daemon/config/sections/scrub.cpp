#include "daemon/config/sections/scrub.hpp"

#include "daemon/core/strings.hpp"

namespace fsaudit::config {
namespace {

const std::vector<std::string>& fs_choices() {
  static const std::vector<std::string> c = {"zfs", "btrfs", "bcachefs", "xfs", "md"};
  return c;
}

// Reads the policy keys of `s` with `base` as defaults (the global defaults for overrides).
ScrubPolicy parse_policy(Section& s, const ScrubPolicy& base) {
  ScrubPolicy p = base;
  p.interval = s.duration("interval", base.interval, std::chrono::minutes(1), std::chrono::hours(24 * 366));
  std::string w = s.string("window", base.window.text.empty() ? "*" : base.window.text);
  auto win = CalendarWindow::parse(w);
  if (!win) s.fail("window", win.error());
  p.window = *win;
  std::string a = s.choice("at_window_end", at_window_end_name(base.at_window_end), {"pause", "cancel", "continue"});
  p.at_window_end = a == "pause" ? AtWindowEnd::pause : a == "cancel" ? AtWindowEnd::cancel : AtWindowEnd::keep_running;
  p.io_load_threshold = s.number("io_load_threshold", base.io_load_threshold, 0, 100);
  p.allow_degraded = s.boolean("allow_degraded", base.allow_degraded);
  p.observe_only = s.boolean("observe_only", base.observe_only);
  p.detect_timers = s.boolean("detect_timers", base.detect_timers);
  p.spread = s.number("spread", base.spread, 0, 1);
  return p;
}

}  // namespace

const char* at_window_end_name(AtWindowEnd a) {
  switch (a) {
    case AtWindowEnd::pause: return "pause";
    case AtWindowEnd::cancel: return "cancel";
    case AtWindowEnd::keep_running: return "continue";
  }
  return "pause";
}

const ScrubPolicy& ScrubConfig::policy_for(const std::string& target_name) const {
  for (const auto& o : targets)
    if (glob_match(o.match, target_name)) return o.policy;
  return defaults;
}

bool ScrubConfig::covers(const std::string& fs) const {
  for (const auto& f : filesystems)
    if (f == fs) return true;
  return false;
}

ScrubConfig parse_scrub(Section s) {
  ScrubConfig c;
  c.enabled = s.boolean("enabled", true);
  c.filesystems = s.strings("filesystems", c.filesystems);
  for (const auto& f : c.filesystems) {
    bool ok = false;
    for (const auto& k : fs_choices()) ok = ok || k == f;
    if (!ok) s.fail("filesystems", "unknown filesystem \"" + f + "\"; use some of zfs, btrfs, bcachefs, xfs, md");
  }
  c.max_concurrent = static_cast<int>(s.integer("max_concurrent", 1, 1, 64));
  c.defaults.window = *CalendarWindow::parse("*");
  c.defaults = parse_policy(s, c.defaults);
  for (auto t : s.list("targets")) {
    ScrubTargetOverride o;
    o.match = t.string("match", "");
    if (o.match.empty()) t.fail("match", "every scrub target override needs 'match' (a glob over the target name)");
    o.policy = parse_policy(t, c.defaults);
    t.finish();
    c.targets.push_back(std::move(o));
  }
  s.finish();
  return c;
}

}  // namespace fsaudit::config
