#pragma once
// Scrubs scheduled by the distribution: enabled systemd timers (enablement symlinks under
// <rootfs>/etc/systemd/system/*.wants/; no systemd PID 1 is needed to see them) and cron jobs.
#include <filesystem>
#include <string>
#include <vector>

namespace fsaudit::scrub {

struct DistroSchedulers {
  std::vector<std::string> units;  // enabled unit names: "zfs-scrub-monthly@tank.timer", ...
  // Cron entries that scrub: "zfs:/etc/cron.d/zfsutils-linux", "md:/etc/cron.d/mdadm", ...
  std::vector<std::string> cron;
};

DistroSchedulers scan_distro_schedulers(const std::filesystem::path& rootfs);

// The timer/cron job that scrubs this target, or "". `name` is the pool (zfs), mount point
// (btrfs/xfs/bcachefs) or md device. Pure.
std::string scheduler_for(const DistroSchedulers& d, const std::string& fs, const std::string& name);

}  // namespace fsaudit::scrub
