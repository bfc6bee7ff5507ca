#include "daemon/core/fstype.hpp"

#include <algorithm>
#include <array>

namespace fsaudit::fstype {

namespace {
template <std::size_t N>
bool in(const std::array<std::string_view, N>& set, std::string_view t) {
  return std::find(set.begin(), set.end(), t) != set.end();
}
}  // namespace

bool is_zfs(std::string_view t) { return t == "zfs" || t == "fuse.zfs" || t == "fuse.zfs-fuse"; }

std::string_view canonical(std::string_view t) { return is_zfs(t) ? std::string_view("zfs") : t; }

bool is_pseudo(std::string_view t) {
  static constexpr std::array<std::string_view, 35> pseudo = {
      "proc", "sysfs", "devtmpfs", "devpts", "tmpfs", "ramfs", "cgroup", "cgroup2", "securityfs",
      "pstore", "efivarfs", "bpf", "debugfs", "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs",
      "autofs", "binfmt_misc", "rpc_pipefs", "nsfs", "overlay", "squashfs", "selinuxfs", "iso9660",
      "nfsd", "fuse.lxcfs", "fuse.gvfsd-fuse", "fuse.portal", "devfs", "rootfs", "shm", "none", "zram"};
  return in(pseudo, t);
}

bool is_storage(std::string_view t) {
  static constexpr std::array<std::string_view, 14> known = {
      "zfs", "btrfs", "bcachefs", "xfs", "ext4", "ext3", "ext2", "f2fs", "jfs", "reiserfs", "vfat", "exfat", "ntfs3", "nilfs2"};
  return is_zfs(t) || in(known, t);
}

bool is_fuse_or_network(std::string_view t) {
  if (is_zfs(t)) return false;
  static constexpr std::array<std::string_view, 6> network = {"nfs", "nfs4", "cifs", "smb3", "ceph", "glusterfs"};
  return t.starts_with("fuse") || in(network, t);
}

}  // namespace fsaudit::fstype
