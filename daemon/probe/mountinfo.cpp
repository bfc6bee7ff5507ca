#include "daemon/probe/mountinfo.hpp"

#include <algorithm>

#include "daemon/core/strings.hpp"

namespace fsaudit {

bool MountEntry::read_only() const {
  // Since Linux 6.x an ext4 that errors=remount-ro shut down keeps "rw" and adds "emergency_ro" to its
  // superblock options (seen on 6.18 after trigger_fs_error): that is read-only too.
  auto has_ro = [](const std::string& opts) {
    for (auto o : split(opts, ','))
      if (o == "ro" || o == "emergency_ro") return true;
    return false;
  };
  return has_ro(mount_options) || has_ro(super_options);
}

Result<std::vector<MountEntry>> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> out;
  // One entry a line: room for them all at once. Grown by doubling, the table kept up to twice what it
  // held for as long as it was kept (10,000 mounts: 0.7 MB).
  out.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  std::string first_bad;
  for (auto line : lines(text)) {
    if (trim(line).empty()) continue;
    auto f = split_ws(line);
    // 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    auto sep = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 10 || sep == f.end() || sep - f.begin() < 6 || f.end() - sep < 3) {
      if (first_bad.empty()) first_bad = std::string(line);
      continue;
    }
    MountEntry e;
    auto id = parse_i64(f[0]);
    auto parent = parse_i64(f[1]);
    auto mm = split(f[2], ':');
    if (!id || !parent || mm.size() != 2 || !parse_u64(mm[0]) || !parse_u64(mm[1])) {
      if (first_bad.empty()) first_bad = std::string(line);
      continue;
    }
    e.mount_id = static_cast<int>(*id);
    e.parent_id = static_cast<int>(*parent);
    e.major = static_cast<unsigned>(*parse_u64(mm[0]));
    e.minor = static_cast<unsigned>(*parse_u64(mm[1]));
    e.root = unescape_octal(f[3]);
    e.mountpoint = unescape_octal(f[4]);
    e.mount_options = std::string(f[5]);
    for (auto it = f.begin() + 6; it != sep; ++it) e.optional_fields.emplace_back(*it);
    e.fstype = std::string(sep[1]);
    e.source = unescape_octal(sep[2]);
    e.super_options = sep + 3 < f.end() ? std::string(sep[3]) : "";
    out.push_back(std::move(e));
  }
  if (out.empty() && !first_bad.empty())
    return err("mountinfo: no line parsed; first bad line: " + first_bad.substr(0, 120));
  // The kernel writes every line whole: one that does not parse means the format is not what this
  // parser knows, and the mounts it describes would silently go unwatched.
  if (!first_bad.empty()) return err("mountinfo: line not understood: " + first_bad.substr(0, 120));
  if (!text.empty() && text.back() != '\n') return err("mountinfo: last line has no newline: cut short");
  // Every mount namespace has at least its root mount: an empty table is a failed read, not "no mounts".
  if (out.empty()) return err("mountinfo: empty (no mount at all, not even the root)");
  return out;
}

}  // namespace fsaudit
