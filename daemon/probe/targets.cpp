#include "daemon/probe/targets.hpp"
#include "daemon/core/fstype.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit {

Result<MountSnapshot> read_mount_table(const HostPaths& host) { return MountTableReader().read(host); }

Result<MountSnapshot> MountTableReader::read(const HostPaths& host) {
  unchanged_ = false;
  // A failed read is no snapshot to come back to: the reader's caller went on without one.
  auto fail = [this](std::string why) {
    last_.reset();
    return Result<MountSnapshot>(err(std::move(why)));
  };
  auto text = read_file(host.proc("self/mountinfo"));
  if (!text) return fail("cannot read the mount table: " + text.error());
  auto hash = std::hash<std::string_view>{}(*text);
  if (last_ && text->size() == size_ && hash == hash_) {
    unchanged_ = true;
    return last_;
  }
  auto parsed = parse_mountinfo(*text);
  if (!parsed) return fail(parsed.error());
  last_ = std::make_shared<const std::vector<MountEntry>>(std::move(*parsed));
  size_ = text->size();
  hash_ = hash;
  return last_;
}

MountTableWatch::MountTableWatch(const HostPaths& host)
    : fd_(::open(host.proc("self/mountinfo").c_str(), O_RDONLY | O_CLOEXEC)) {}

MountTableWatch::~MountTableWatch() {
  if (fd_ >= 0) ::close(fd_);
}

bool MountTableWatch::changed() {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLPRI, 0};
  // The kernel's answer also consumes the event: the next poll is quiet until the next change.
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)) != 0;
}

Result<MountSnapshot> mount_table(const ProbeContext& ctx) {
  if (ctx.mounts) return ctx.mounts;
  return read_mount_table(ctx.host);
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
    if (fstype::is_pseudo(m->fstype)) continue;
    if (!sel.fstypes.empty() && std::find(sel.fstypes.begin(), sel.fstypes.end(), m->fstype) == sel.fstypes.end())
      continue;
    // FUSE (but zfs-fuse) and network filesystems are only watched when asked for by fstype.
    if (sel.fstypes.empty() && fstype::is_fuse_or_network(m->fstype)) continue;
    bool inc = std::any_of(sel.include.begin(), sel.include.end(),
                           [&](const std::string& g) { return glob_match(g, m->mountpoint); });
    bool exc = std::any_of(sel.exclude.begin(), sel.exclude.end(),
                           [&](const std::string& g) { return glob_match(g, m->mountpoint); });
    if (!inc || exc) continue;
    // ZFS datasets share no block device: every dataset mount is its own target. Others: one per device.
    if (!fstype::is_zfs(m->fstype) && seen_dev.count({m->major, m->minor})) continue;
    add(*m, m->mountpoint);
  }
  return out;
}

}  // namespace fsaudit
