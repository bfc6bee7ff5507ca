#include "probes/canary/safety.hpp"

#include <algorithm>
#include <set>

#include "daemon/core/fstype.hpp"
#include "daemon/core/files.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;

namespace {

std::string resolve(const std::string& p) {
  if (p.empty() || p[0] != '/') return p;
  std::error_code ec;
  auto c = fs::canonical(p, ec);
  return ec ? p : c.string();
}

bool is_member_mount(const MountEntry& e, const std::vector<DeviceIdentity>& members) {
  std::string src = resolve(e.source);
  for (const auto& m : members) {
    if (src == m.resolved) return true;
    if (m.kind != DeviceKind::file && m.major != 0 && e.major == m.major && e.minor == m.minor) return true;
  }
  return false;
}

}  // namespace

Result<bool> mounted_at(const HostPaths& host, const std::string& mountpoint) {
  auto mounts = read_mount_table(host);
  if (!mounts) return err(mounts.error());
  return std::any_of((*mounts)->begin(), (*mounts)->end(),
                     [&](const MountEntry& e) { return e.mountpoint == mountpoint; });
}

std::string mount_conflict(const std::vector<MountEntry>& mounts, const std::vector<DeviceIdentity>& members,
                           const config::CanaryTarget& t, bool online, bool pool_mount) {
  const MountEntry* canary_mount = nullptr;
  for (const auto& e : mounts)
    if (e.mountpoint == t.mountpoint) canary_mount = &e;  // the last one is on top
  for (const auto& e : mounts) {
    if (!is_member_mount(e, members)) continue;
    if (!online) return "canary device " + resolve(e.source) + " is mounted at " + e.mountpoint + "; expected it offline";
    if (e.mountpoint != t.mountpoint)
      return "canary device " + resolve(e.source) + " is also mounted at " + e.mountpoint + ", outside the canary";
  }
  if (!online) {
    if (pool_mount && canary_mount) return "canary pool mount point " + t.mountpoint + " is still mounted";
    return "";
  }
  if (!canary_mount) {
    const MountEntry* host = containing_mount(mounts, t.mountpoint);
    return "canary mount point " + t.mountpoint + " is not mounted" +
           (host ? "; that path lies on " + host->source + " (" + host->fstype + ", mounted at " + host->mountpoint +
                       "), which is not the canary: refusing to touch it"
                 : "");
  }
  if (pool_mount) {
    bool pool_fs = fstype::is_zfs(canary_mount->fstype) &&
                   (canary_mount->source == t.pool || canary_mount->source.rfind(t.pool + "/", 0) == 0);
    if (!pool_fs)
      return t.mountpoint + " is " + canary_mount->source + " (" + canary_mount->fstype +
             "), a production filesystem, not the canary pool " + t.pool;
  } else {
    if (!is_member_mount(*canary_mount, members))
      return t.mountpoint + " is " + canary_mount->source + " (" + canary_mount->fstype +
             "), a production filesystem, not the canary's devices";
    if (canary_mount->fstype != t.fs)
      return t.mountpoint + " is mounted as " + canary_mount->fstype + ", the config says " + t.fs;
  }
  if (canary_mount->root != "/") return t.mountpoint + " is a bind mount of " + canary_mount->root + ", not the canary's root";
  for (const auto& e : mounts) {
    if (&e == canary_mount || e.mountpoint == t.mountpoint) continue;
    if (e.major == canary_mount->major && e.minor == canary_mount->minor)
      return "the canary filesystem is also mounted at " + e.mountpoint + ", outside the canary";
  }
  return "";
}

namespace {

Result<std::vector<DeviceIdentity>> common_checks(const config::CanaryTarget& t, const HostPaths& host,
                                                  CanaryOps& stack, bool online) {
  std::vector<DeviceIdentity> ids;
  std::set<std::string> seen;
  for (const auto& d : t.devices) {
    auto id = identify_device(d, host);
    if (!id) return err(id.error());
    if (!seen.insert(id->resolved).second) return err("device " + d + " is listed twice");
    if (auto stable = weak_identity(*id); !stable) return err(stable.error());
    if (id->kind != DeviceKind::file) {
      fs::path holders = host.sys("dev/block/" + std::to_string(id->major) + ":" + std::to_string(id->minor)) / "holders";
      std::error_code ec;
      for (fs::directory_iterator it(holders, ec), end; !ec && it != end; it.increment(ec))
        return err("canary device " + id->resolved + " is held by " + it->path().filename().string() +
                   " (device mapper / md): it is in use outside the canary");
    } else if (!stack.allows_file_members()) {
      return err("device " + d + " is a regular file; only ZFS canaries may use file vdevs");
    }
    ids.push_back(*id);
  }
  auto mounts = read_mount_table(host);
  if (!mounts) return err(mounts.error());
  std::string why = mount_conflict(**mounts, ids, t, online, stack.mounted_as_pool());
  if (!why.empty()) return err(why);
  if (online && stack.lists_members()) {
    auto m = stack.members();
    if (!m) return err(m.error());
    std::set<std::string> want, have(m->begin(), m->end());
    for (const auto& i : ids) want.insert(i.resolved);
    if (want != have) {
      std::string list;
      for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
      return err("the canary " + t.fs + " has members [" + list + "], which is not the configured device list");
    }
  }
  return ids;
}

}  // namespace

Result<std::vector<DeviceIdentity>> verify_for_init(const config::CanaryTarget& t, const HostPaths& host, CanaryOps& stack) {
  return common_checks(t, host, stack, true);
}

Result<Verified> verify_canary(const config::CanaryConfig& cfg, const std::string& name, const HostPaths& host,
                               const fs::path& state_dir, CanaryOps& stack, bool online) {
  Verified v;
  v.target = cfg.find(name);
  if (!v.target) return err("\"" + name + "\" is not a canary in the config; only configured canaries may be corrupted");
  auto rec = load_record(state_dir, name);
  if (!rec) return err(rec.error());
  v.record = *rec;
  const auto& t = *v.target;
  if (rec->devices.size() != t.devices.size())
    return err("the config lists " + std::to_string(t.devices.size()) + " devices but " +
               std::to_string(rec->devices.size()) + " were recorded at init; re-run canary init");
  for (std::size_t i = 0; i < t.devices.size(); ++i) {
    const auto& r = rec->devices[i];
    if (r.path != t.devices[i])
      return err("device " + t.devices[i] + " is not the one recorded at init (" + r.path + "); re-run canary init");
    auto now = identify_device(t.devices[i], host);
    if (!now) return err(now.error());
    if (auto same = identity_mismatch(r, *now); !same) return err("device identity changed: " + same.error());
  }
  auto ids = common_checks(t, host, stack, online);
  if (!ids) return err(ids.error());
  v.members = *ids;
  if (online) {
    auto sig = read_file(fs::path(t.mountpoint) / kSignatureFile, 4096);
    if (!sig) return err("no fsaudit signature on " + t.mountpoint + " (" + kSignatureFile + "); run canary init");
    if (auto signed_ = check_signature(*sig, name, rec->signature_id); !signed_)
      return err("signature check failed on " + t.mountpoint + ": " + signed_.error());
  }
  return v;
}

}  // namespace fsaudit::canary
