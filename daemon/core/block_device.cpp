#include "daemon/core/block_device.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <system_error>

namespace fsaudit::block {

namespace fs = std::filesystem;

namespace {

// Where an absolute link target ("/dev/sdb1") lives on this host view.
fs::path rebase(const HostPaths& host, const fs::path& target) {
  auto s = target.lexically_normal().string();
  if (s == "/dev") return host.devfs;
  if (s.starts_with("/dev/")) return host.devfs / s.substr(5);
  if (s.starts_with("/sys/")) return host.sysfs / s.substr(5);
  return host.rootfs / target.relative_path();
}

}  // namespace

std::optional<std::string> name_of_devnum(const HostPaths& host, unsigned major, unsigned minor) {
  std::error_code ec;
  auto link = host.sys("dev/block") / (std::to_string(major) + ":" + std::to_string(minor));
  auto t = fs::read_symlink(link, ec);
  if (ec) return std::nullopt;
  auto n = t.filename().string();
  if (n.empty() || n == "." || n == "..") return std::nullopt;
  return n;
}

namespace {

// Follows `path` to its device; `last` is where the walk ended (the missing target of a dangling
// link, or the device node).
Result<std::string> walk(const HostPaths& host, std::string_view path, fs::path& last) {
  if (path.empty()) return err("empty device path");
  if (path.find('/') == std::string_view::npos) return std::string(path);
  if (!path.starts_with("/dev/")) return err(std::string(path) + ": not a device path under /dev");
  fs::path& p = last;
  p = host.devfs / std::string(path.substr(5));
  std::error_code ec;
  for (int hops = 0; hops < 40; ++hops) {
    auto st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) {
      if (hops == 0) return err(std::string(path) + ": no such device");
      return err(std::string(path) + ": dangling link (ends at " + p.string() + ", which does not exist)");
    }
    if (!fs::is_symlink(st)) {
      struct stat sb {};
      if (::stat(p.c_str(), &sb) == 0 && S_ISBLK(sb.st_mode))
        if (auto n = name_of_devnum(host, major(sb.st_rdev), minor(sb.st_rdev))) return *n;
      return p.filename().string();
    }
    auto target = fs::read_symlink(p, ec);
    if (ec) return err(std::string(path) + ": cannot read link " + p.string() + ": " + ec.message());
    p = target.is_absolute() ? rebase(host, target) : (p.parent_path() / target).lexically_normal();
  }
  return err(std::string(path) + ": too many levels of symbolic links");
}

}  // namespace

Result<std::string> kernel_name(const HostPaths& host, std::string_view path) {
  fs::path last;
  return walk(host, path, last);
}

std::string kernel_name_or_target(const HostPaths& host, std::string_view path) {
  fs::path last;
  if (auto n = walk(host, path, last)) return *n;
  if (!last.empty() && !last.filename().empty() && last.filename() != "..") return last.filename().string();
  return fs::path(std::string(path)).filename().string();
}

std::string kernel_name_or_last(const HostPaths& host, std::string_view path) {
  if (auto n = kernel_name(host, path)) return *n;
  return fs::path(std::string(path)).filename().string();
}

std::string parent_disk(const HostPaths& host, std::string_view name_in) {
  std::string name(name_in);
  std::error_code ec;
  auto cls = host.sys("class/block") / name;
  if (fs::exists(cls / "partition", ec)) {
    // /sys/class/block/sda1 -> ../../devices/.../block/sda/sda1: the parent directory is the disk.
    auto link = fs::read_symlink(cls, ec);
    if (!ec) {
      auto parent = link.parent_path().filename().string();
      if (!parent.empty() && parent != "." && parent != "..") return parent;
    }
    auto canon = fs::canonical(cls, ec);
    if (!ec) return canon.parent_path().filename().string();
  }
  if (fs::exists(cls, ec)) return name;  // known to sysfs and not a partition
  // No sysfs entry: the kernel's naming rules. "nvme0n1p2", "mmcblk0p1", "loop0p1" -> before the
  // "p"; "sda1", "vdb12" -> without the digits. Device-mapper and md names are never partitions.
  if (name.starts_with("dm-") || name.starts_with("md")) return name;
  auto last_alpha = name.find_last_not_of("0123456789");
  if (last_alpha == std::string::npos || last_alpha + 1 == name.size()) return name;
  if (name[last_alpha] == 'p' && last_alpha > 0 && name[last_alpha - 1] >= '0' && name[last_alpha - 1] <= '9')
    return name.substr(0, last_alpha);
  if (name.starts_with("nvme") || name.starts_with("mmcblk") || name.starts_with("loop")) return name;
  return name.substr(0, last_alpha + 1);
}

}  // namespace fsaudit::block
