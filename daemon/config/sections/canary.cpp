#include "daemon/config/sections/canary.hpp"

#include <cctype>
#include <set>

namespace fsaudit::config {

const std::vector<std::string>& canary_fs_choices() {
  static const std::vector<std::string> v = {"btrfs", "zfs", "xfs", "ext4"};
  return v;
}

const std::vector<LabStack>& canary_lab_stacks() {
  // btrfs metadata keeps two copies everywhere (dup on one device) so that corrupted data is
  // reported, never an unreadable filesystem.
  static const std::vector<LabStack> v = {
      {"btrfs-single", "btrfs", "single", 1, 1, "single"},
      {"btrfs-dup", "btrfs", "dup", 1, 1, "dup"},
      {"btrfs-raid1", "btrfs", "raid1", 2, 1, "raid1"},
      {"btrfs-raid1c3", "btrfs", "raid1c3", 3, 1, "raid1c3"},
      {"btrfs-raid10", "btrfs", "raid10", 4, 1, "raid10"},
      {"zfs-single", "zfs", "", 1, 1, "single"},
      {"zfs-single-copies2", "zfs", "", 1, 2, "single"},
      {"zfs-mirror", "zfs", "mirror", 2, 1, "mirror"},
      {"zfs-mirror-copies2", "zfs", "mirror", 2, 2, "mirror"},
      {"zfs-raidz1", "zfs", "raidz1", 3, 1, "raidz1"},
      {"xfs", "xfs", "", 1, 1, "plain"},
      {"ext4", "ext4", "", 1, 1, "plain"},
  };
  return v;
}

const LabStack* find_lab_stack(const std::string& name) {
  for (const auto& s : canary_lab_stacks())
    if (s.name == name) return &s;
  return nullptr;
}

namespace {

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return n != "." && n != "..";
}

CanaryTarget parse_one(Section& e, std::set<std::string>& seen) {
  CanaryTarget t;
  t.name = e.string("name", "");
  if (!valid_name(t.name)) e.fail(e.has("name") ? "name" : "", "every canary needs a name of letters, digits, '-', '_' or '.' (e.g. btrfs-mirror)");
  if (!seen.insert(t.name).second) e.fail("name", "duplicate canary name \"" + t.name + "\"; names must be unique");
  t.fs = e.choice("fs", "", canary_fs_choices());
  if (t.fs.empty()) e.fail("", "key 'fs' is required: one of btrfs, zfs, xfs, ext4");
  t.layout = e.string("layout", "single");
  t.devices = e.strings("devices", {});
  if (t.devices.empty()) e.fail(e.has("devices") ? "devices" : "", "list the canary's member devices (e.g. [/dev/disk/by-id/...-part9])");
  for (const auto& d : t.devices) {
    if (d.empty() || d[0] != '/') e.fail("devices", "device paths must be absolute, found \"" + d + "\"");
    // A btrfs canary's other members go into `mount -o device=PATH`, where a comma starts another
    // mount option: refused here rather than split into options as root mounts it.
    if (d.find_first_of(",\n") != std::string::npos)
      e.fail("devices", "device path \"" + d + "\" contains a comma or newline, which mount options cannot carry; "
                        "name the device by a path without one (e.g. a /dev/disk/by-id/ link)");
  }
  t.mountpoint = e.string("mountpoint", "");
  if (t.mountpoint.empty() || t.mountpoint[0] != '/' || t.mountpoint == "/")
    e.fail(e.has("mountpoint") ? "mountpoint" : "", "key 'mountpoint': the canary's own mount point (absolute, not /) is required");
  t.pool = e.string("pool", "");
  if (t.fs == "zfs" && t.pool.empty()) e.fail("", "key 'pool' is required: a ZFS canary needs the name of its dedicated pool");
  if (t.fs != "zfs" && !t.pool.empty()) e.fail("pool", "only ZFS canaries have a pool; remove this key");
  t.expect = e.choice("expect", "", {"repaired", "detected", "blind"});
  t.interval = e.duration("interval", t.interval, std::chrono::minutes(1), std::chrono::days(31));
  std::string w = e.string("window", "*");
  auto win = CalendarWindow::parse(w);
  if (!win) e.fail("window", win.error() + " (e.g. \"Sat 01:00-06:00\" or \"*\")");
  t.window = *win;
  t.timeout = e.duration("timeout", t.timeout, std::chrono::seconds(10), std::chrono::hours(24));
  t.file_blocks = static_cast<std::uint64_t>(e.integer("file_blocks", 64, 4, 65536));
  t.corrupt_bytes = static_cast<std::uint64_t>(e.integer("corrupt_bytes", 16, 1, 512));
  t.mount_options = e.string("mount_options", "");
  e.finish();
  return t;
}

}  // namespace

CanaryConfig parse_canary(Section s) {
  CanaryConfig c;
  std::set<std::string> seen;
  for (auto e : s.list("canaries")) {
    auto t = parse_one(e, seen);
    // Two canaries on one device, mount point or pool would corrupt and clean up each other.
    for (const auto& o : c.canaries) {
      for (const auto& d : t.devices)
        for (const auto& od : o.devices)
          if (d == od) e.fail("devices", "device " + d + " is also a member of canary \"" + o.name + "\"; canaries must not overlap");
      if (t.mountpoint == o.mountpoint)
        e.fail("mountpoint", "mount point " + t.mountpoint + " is also canary \"" + o.name + "\"'s; canaries must not overlap");
      if (!t.pool.empty() && t.pool == o.pool)
        e.fail("pool", "pool " + t.pool + " is also canary \"" + o.name + "\"'s; canaries must not overlap");
    }
    c.canaries.push_back(std::move(t));
  }
  c.helper = s.string("helper", "");
  if (!c.helper.empty() && c.helper[0] != '/') s.fail("helper", "the fsaudit-helper socket path must be absolute (e.g. /run/fsaudit/helper.sock)");
  Section lab = s.section("lab");
  c.lab.enabled = lab.boolean("enabled", false);
  c.lab.dir = lab.string("dir", "");
  if (!c.lab.dir.empty() && c.lab.dir[0] != '/') lab.fail("dir", "must be an absolute path (default: <state_dir>/lab)");
  c.lab.image_size = lab.size("image_size", c.lab.image_size, 110ull << 20, 4ull << 30);
  c.lab.xfs_image_size = lab.size("xfs_image_size", c.lab.xfs_image_size, 300ull << 20, 8ull << 30);
  c.lab.stacks = lab.strings("stacks", c.lab.stacks);
  for (const auto& st : c.lab.stacks) {
    if (find_lab_stack(st)) continue;
    std::string names;
    for (const auto& k : canary_lab_stacks()) names += (names.empty() ? "" : ", ") + k.name;
    lab.fail("stacks", "unknown lab stack \"" + st + "\"; choose from " + names);
  }
  c.lab.interval = lab.duration("interval", c.lab.interval, std::chrono::seconds(10), std::chrono::days(31));
  lab.finish();
  s.finish();
  return c;
}

}  // namespace fsaudit::config
