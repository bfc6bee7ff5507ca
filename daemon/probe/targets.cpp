#include "daemon/probe/targets.hpp"

#include <algorithm>
#include <set>

#include "daemon/core/files.hpp"
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
  return out;
}

Result<MountSnapshot> read_mount_table(const HostPaths& host) {
  auto text = read_file(host.proc("self/mountinfo"));
  if (!text) return err("cannot read the mount table: " + text.error());
  auto parsed = parse_mountinfo(*text);
  if (!parsed) return err(parsed.error());
  return MountSnapshot(std::make_shared<const std::vector<MountEntry>>(std::move(*parsed)));
}

Result<MountSnapshot> mount_table(const ProbeContext& ctx) {
  if (ctx.mounts) return ctx.mounts;
  return read_mount_table(ctx.host);
}

bool is_pseudo_fstype(std::string_view t) {
  static const std::set<std::string_view> pseudo = {
      "proc", "sysfs", "devtmpfs", "devpts", "tmpfs", "ramfs", "cgroup", "cgroup2", "securityfs",
      "pstore", "efivarfs", "bpf", "debugfs", "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs",
      "autofs", "binfmt_misc", "rpc_pipefs", "nsfs", "overlay", "squashfs", "selinuxfs", "iso9660",
      "nfsd", "fuse.lxcfs", "fuse.gvfsd-fuse", "fuse.portal", "devfs", "rootfs", "shm", "none", "zram"};
  return pseudo.count(t) > 0;
}

bool is_storage_fstype(std::string_view t) {
  static const std::set<std::string_view> known = {"zfs", "btrfs", "bcachefs", "xfs", "ext4", "ext3", "ext2",
                                                   "f2fs", "jfs", "reiserfs", "vfat", "exfat", "ntfs3", "nilfs2"};
  return known.count(t) > 0;
}

const MountEntry* containing_mount(const std::vector<MountEntry>& mounts, const std::string& path) {
  const MountEntry* best = nullptr;
  for (const auto& m : mounts) {
    const auto& mp = m.mountpoint;
    bool prefix = path == mp || mp == "/" ||
                  (path.size() > mp.size() && path.compare(0, mp.size(), mp) == 0 && path[mp.size()] == '/');
    // Later entries shadow earlier ones on the same mount point.
    if (prefix && (!best || mp.size() >= best->mountpoint.size())) best = &m;
  }
  return best;
}

namespace {
Target to_target(const MountEntry& m, std::string name) {
  Target t;
  t.name = std::move(name);
  t.mountpoint = m.mountpoint;
  t.fstype = m.fstype;
  t.source = m.source;
  t.mount_options = m.mount_options;
  t.super_options = m.super_options;
  t.dev_major = m.major;
  t.dev_minor = m.minor;
  return t;
}
}  // namespace

std::vector<Target> select_targets(const std::vector<MountEntry>& mounts, const TargetSelection& sel,
                                   std::vector<std::string>* warnings) {
  std::vector<Target> out;
  std::set<std::pair<unsigned, unsigned>> seen_dev;
  std::set<std::string> seen_mp;
  auto add = [&](const MountEntry& m, std::string name) {
    if (!seen_mp.insert(m.mountpoint).second) return;
    seen_dev.insert({m.major, m.minor});
    out.push_back(to_target(m, std::move(name)));
  };
  for (const auto& t : sel.explicit_targets) {
    const MountEntry* m = containing_mount(mounts, t.path);
    if (!m) {
      if (warnings) warnings->push_back("explicit target " + t.path + " is not on any mounted filesystem");
      continue;
    }
    add(*m, t.name.empty() ? m->mountpoint : t.name);
  }
  if (!sel.discover) return out;
  // Shortest mount point first, so a filesystem is named by its main mount, not a bind mount.
  std::vector<const MountEntry*> sorted;
  for (const auto& m : mounts) sorted.push_back(&m);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    if ((a->root == "/") != (b->root == "/")) return a->root == "/";
    return a->mountpoint.size() < b->mountpoint.size();
  });
  for (const MountEntry* m : sorted) {
    if (is_pseudo_fstype(m->fstype)) continue;
    if (!sel.fstypes.empty() && std::find(sel.fstypes.begin(), sel.fstypes.end(), m->fstype) == sel.fstypes.end())
      continue;
    if (!sel.fstypes.empty() || !is_storage_fstype(m->fstype)) {
      // Unknown fuse or network filesystems are only watched when asked for by fstype.
      if (sel.fstypes.empty() && (m->fstype.rfind("fuse", 0) == 0 || m->fstype == "nfs" || m->fstype == "nfs4" ||
                                  m->fstype == "cifs" || m->fstype == "smb3"))
        continue;
    }
    bool inc = std::any_of(sel.include.begin(), sel.include.end(),
                           [&](const std::string& g) { return glob_match(g, m->mountpoint); });
    bool exc = std::any_of(sel.exclude.begin(), sel.exclude.end(),
                           [&](const std::string& g) { return glob_match(g, m->mountpoint); });
    if (!inc || exc) continue;
    // ZFS datasets share no block device: every dataset mount is its own target. Others: one per device.
    if (m->fstype != "zfs" && seen_dev.count({m->major, m->minor})) continue;
    add(*m, m->mountpoint);
  }
  return out;
}

}  // namespace fsaudit
