#include "probes/scrub/timers.hpp"

#include <algorithm>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/scrub/parsers.hpp"

namespace fsaudit::scrub {
namespace fs = std::filesystem;

namespace {

// Which scrub a cron line runs.
std::string cron_kind(std::string_view line) {
  auto l = trim(line);
  if (l.empty() || l[0] == '#') return "";
  if (l.find("zpool scrub") != std::string_view::npos || l.find("zfs-linux/scrub") != std::string_view::npos)
    return "zfs";
  if (l.find("btrfs scrub") != std::string_view::npos || l.find("btrfs-scrub") != std::string_view::npos) return "btrfs";
  if (l.find("xfs_scrub") != std::string_view::npos) return "xfs";
  if (l.find("checkarray") != std::string_view::npos || l.find("mdcheck") != std::string_view::npos) return "md";
  if (l.find("bcachefs") != std::string_view::npos && l.find("scrub") != std::string_view::npos) return "bcachefs";
  return "";
}

void scan_cron_file(const fs::path& p, const fs::path& rootfs, std::vector<std::string>& out) {
  auto text = read_file(p, 1 << 20);
  if (!text) return;
  for (auto line : lines(*text)) {
    auto k = cron_kind(line);
    if (k.empty()) continue;
    std::string rel = "/" + fs::relative(p, rootfs).string();
    std::string entry = k + ":" + rel;
    if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(entry);
  }
}

}  // namespace

DistroSchedulers scan_distro_schedulers(const fs::path& rootfs) {
  DistroSchedulers d;
  std::error_code ec;
  auto sys = rootfs / "etc/systemd/system";
  for (auto it = fs::directory_iterator(sys, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto n = it->path().filename().string();
    if (n.size() < 6 || n.substr(n.size() - 6) != ".wants") continue;
    std::error_code ec2;
    for (auto u = fs::directory_iterator(it->path(), ec2); !ec2 && u != fs::directory_iterator(); u.increment(ec2))
      d.units.push_back(u->path().filename().string());
  }
  std::sort(d.units.begin(), d.units.end());
  for (const char* dir : {"etc/cron.d", "etc/cron.daily", "etc/cron.weekly", "etc/cron.monthly"}) {
    std::error_code ec3;
    for (auto it = fs::directory_iterator(rootfs / dir, ec3); !ec3 && it != fs::directory_iterator(); it.increment(ec3))
      scan_cron_file(it->path(), rootfs, d.cron);
  }
  scan_cron_file(rootfs / "etc/crontab", rootfs, d.cron);
  return d;
}

std::string scheduler_for(const DistroSchedulers& d, const std::string& fstype, const std::string& name) {
  auto has = [&](const std::string& u) { return std::find(d.units.begin(), d.units.end(), u) != d.units.end(); };
  if (fstype == "zfs") {
    // zfs-scrub-weekly@POOL.timer, zfs-scrub-monthly@POOL.timer (OpenZFS contrib/systemd).
    for (const auto& u : d.units)
      if (u.rfind("zfs-scrub", 0) == 0 && u.size() > 6 && u.substr(u.size() - 6) == ".timer") {
        auto at = u.find('@');
        if (at != std::string::npos && u.substr(at + 1, u.size() - 6 - at - 1) == name) return u;
      }
  } else if (fstype == "btrfs") {
    std::string per = "btrfs-scrub@" + systemd_escape_path(name) + ".timer";  // btrfs-progs' unit
    if (has(per)) return per;
    if (has("btrfs-scrub.timer")) return "btrfs-scrub.timer";  // btrfsmaintenance
  } else if (fstype == "xfs") {
    if (has("xfs_scrub_all.timer")) return "xfs_scrub_all.timer";
    std::string per = "xfs_scrub@" + systemd_escape_path(name) + ".service";
    if (has(per)) return per;
  } else if (fstype == "md") {
    if (has("mdcheck_start.timer")) return "mdcheck_start.timer";
  }
  for (const auto& c : d.cron)
    if (c.rfind(fstype + ":", 0) == 0) return "cron " + c.substr(fstype.size() + 1);
  return "";
}

}  // namespace fsaudit::scrub
