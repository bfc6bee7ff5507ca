// fsaudit-helper verbs for the host's root-only operations other than canary cycles (see
// docs/security.md): each takes typed string arguments, and every name and path is checked against
// what the helper finds itself (its own config, the mount table, sysfs), never the caller's word.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/canary/helper_protocol.hpp"
#include "probes/canary/lock.hpp"
#include "probes/canary/safety.hpp"
#include "probes/canary/stack.hpp"
#include "probes/latency/probe.hpp"
#include "probes/latency/sampler.hpp"
#include "probes/latency/stacks.hpp"
#include "probes/scrub/helper_verbs.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct HostVerb {
  const char* name;
  std::vector<std::string> args;
};

const std::vector<HostVerb>& host_verbs() {
  static const std::vector<HostVerb> v = {
      {"counters-clear", {"canary"}},
      {"btrfs-device-stats", {"mountpoint"}},
      {"btrfs-scrub-status", {"mountpoint"}},
      {"md-sync-action", {"device", "action"}},
      {"latency-file-create", {"target"}},
  };
  return v;
}

std::string refuse(const std::string& why) { return json{{"ok", false}, {"refused", why}}.dump() + "\n"; }
std::string done(const json& result) { return json{{"ok", true}, {"result", result}}.dump() + "\n"; }

using Args = std::map<std::string, std::string>;

std::string counters_clear(const Args& a, const config::Config& own, CommandRunner& runner) {
  const auto& name = a.at("canary");
  const auto* t = own.canary.find(name);
  if (!t) return refuse("\"" + name + "\" is not a canary in the helper's config (" + own.source + ")");
  // A pending cycle's counters are settled by its recovery (canary-run), which knows what it caused.
  std::error_code ec;
  if (fs::exists(inflight_path(own.state_dir, name), ec))
    return refuse("canary " + name + " has a pending cycle; canary-run recovers it (and clears what it caused)");
  auto lock = CanaryLock::acquire(own.state_dir, *t, own.host);
  if (!lock) return refuse("canary " + name + " is busy: " + lock.error());
  auto ops = make_canary_ops(*t, StackEnv{runner, own.tools, {}, std::chrono::minutes(2)}, own.host);
  if (!ops) return refuse(ops.error());
  // Only a verified, mounted canary: otherwise the mount point belongs to some other filesystem
  // and its counters are real evidence.
  auto v = verify_canary(own.canary, name, own.host, own.state_dir, **ops, true);
  if (!v) return refuse("canary " + name + " is not verified, nothing cleared: " + v.error());
  if (auto r = (*ops)->clear_counters(); !r) return refuse("clearing the counters of canary " + name + ": " + r.error());
  return done({{"canary", name}, {"cleared", true}});
}

// `btrfs ARGS MOUNTPOINT` (ioctls that need CAP_SYS_ADMIN), for a btrfs mount the helper watches.
std::string btrfs_read(const Args& a, const config::Config& own, CommandRunner& runner, std::vector<std::string> args) {
  const auto& mp = a.at("mountpoint");
  auto mounts = read_mount_table(own.host);
  if (!mounts) return refuse("cannot read the mount table: " + mounts.error());
  bool watched = false;
  for (const auto& t : select_targets(**mounts, own.targets)) watched = watched || (t.fstype == "btrfs" && t.mountpoint == mp);
  if (!watched) return refuse(mp + " is not a btrfs mount point the helper's config (" + own.source + ") watches");
  CommandSpec spec;
  auto it = own.tools.find("btrfs");
  spec.argv = {it == own.tools.end() || it->second.empty() ? std::string("btrfs") : it->second};
  for (auto& x : args) spec.argv.push_back(std::move(x));
  spec.argv.push_back(mp);
  spec.timeout = std::chrono::seconds(60);
  spec.max_output = 1 << 20;
  auto r = runner.run(spec);
  std::string what = "btrfs " + spec.argv[1] + " " + spec.argv[2] + " " + mp;
  if (!r.exited || r.truncated || (r.exit_code != 0 && r.out.empty())) return refuse(what + ": " + r.describe());
  return done({{"mountpoint", mp}, {"exit", r.exit_code}, {"out", r.out}});
}

std::string md_sync_action(const Args& a, const config::Config& own, CommandRunner& runner, uid_t peer_uid) {
  const auto& dev = a.at("device");
  const auto& action = a.at("action");
  // Only starting and stopping a check: "repair" rewrites data, "idle" only ends a check.
  if (action != "check" && action != "idle") return refuse("action \"" + action + "\" is not check or idle");
  bool plain = dev.size() > 2 && dev.rfind("md", 0) == 0 &&
               dev.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  fs::path md = own.host.sys("block") / dev / "md";
  auto level = plain ? read_file(md / "level") : Result<std::string>(err("not an md device name"));
  std::string l = level ? std::string(trim(*level)) : "";
  if (l.empty() || l == "raid0" || l == "linear" || l == "container" || l == "multipath")
    return refuse("\"" + dev + "\" is not an md array with redundancy on this host");
  auto now = read_file(md / "sync_action");
  if (!now) return refuse("cannot read " + (md / "sync_action").string() + ": " + now.error());
  std::string cur(trim(*now));
  // Never interrupt a resync or recovery the kernel started: idle only ends a check.
  if (action == "idle" && cur != "check") return refuse(dev + " is running \"" + cur + "\", not a check: left alone");
  if (action == "check" && cur != "idle") return refuse(dev + " is busy (" + cur + ")");
  // The act is the scrub verbs': the same targets (scrub:, targets: exclude), policy (observe_only,
  // allow_degraded) and record of which check fsaudit started, so this older verb is no way around them.
  // md only: nothing else is discovered (no zpool runs for an md request).
  config::Config md_only = own;
  md_only.scrub.filesystems = {"md"};
  auto r = scrub::carry_out_helper_scrub(action == "check" ? "start" : "cancel", dev, md_only, runner, peer_uid == 0,
                                         std::nullopt);
  if (!r.ok)
    return refuse("the helper's config (" + own.source + ") does not let fsaudit scrub md array " + dev + " now: " + r.text);
  return done({{"device", dev}, {"action", action}, {"was", cur}});
}

// Opens (creating when absent) `name` in `dirfd` without following symlinks, and hands it to the
// caller. What we did not just create must be the caller's already: chowning a pre-existing root
// file would give the caller any file root keeps (hard-linked or placed there).
std::string own_for_peer(int dirfd, const std::string& name, bool dir, uid_t uid, gid_t gid, int* out) {
  bool created = false;
  if (dir) {
    created = ::mkdirat(dirfd, name.c_str(), 0700) == 0;
    if (!created && errno != EEXIST) return "mkdir " + name + ": " + std::strerror(errno);
  } else {
    int c = ::openat(dirfd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (c < 0 && errno != EEXIST) return "create " + name + ": " + std::strerror(errno);
    if (c >= 0) ::close(c);
    created = c >= 0;
  }
  int fd = dir ? ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
               : ::openat(dirfd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "open " + name + ": " + std::strerror(errno);
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) why = std::string("fstat: ") + std::strerror(errno);
  else if (dir ? !S_ISDIR(st.st_mode) : (!S_ISREG(st.st_mode) || st.st_nlink != 1)) why = name + " is not a plain " + (dir ? "directory" : "file");
  else if (st.st_uid != uid && !(created && st.st_uid == ::geteuid()))
    why = name + " already exists and belongs to uid " + std::to_string(st.st_uid) + ", not the caller";
  else if (::fchown(fd, uid, gid) != 0 || ::fchmod(fd, dir ? 0700 : 0600) != 0) why = "chown/chmod " + name + ": " + std::strerror(errno);
  if (!why.empty()) {
    ::close(fd);
    return why;
  }
  *out = fd;
  return "";
}

std::string latency_file_create(const Args& a, const config::Config& own, uid_t uid, gid_t gid) {
  const auto& target = a.at("target");
  auto mounts = read_mount_table(own.host);
  if (!mounts) return refuse("cannot read the mount table: " + mounts.error());
  fs::path dir = fs::path(target) / own.latency.dir_name;
  bool planned = false;
  if (own.latency.enabled)
    for (const auto& p : latency::plan_stacks(**mounts, select_targets(**mounts, own.watched_targets()),
                                                       latency::stack_selection(own.latency), own.host))
      planned = planned || (p.sampled && fs::path(p.dir(own.latency.dir_name)) == dir);
  if (!planned) return refuse(target + " is not where the helper's config (" + own.source + ") puts a latency probe file");
  // Every component, not just the last: a symlinked parent would move the file anywhere.
  int tfd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tfd < 0) return refuse(std::string("open /: ") + std::strerror(errno));
  for (const auto& part : fs::path(target).relative_path()) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      ::close(tfd);
      return refuse(target + " contains \"..\"");
    }
    int next = ::openat(tfd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    ::close(tfd);
    if (next < 0) return refuse("open " + target + " at " + part.string() + " (symlinks are not followed): " + std::strerror(e));
    tfd = next;
  }
  int dfd = -1, ffd = -1;
  auto why = own_for_peer(tfd, own.latency.dir_name, true, uid, gid, &dfd);
  ::close(tfd);
  if (why.empty()) {
    why = own_for_peer(dfd, latency::ProbeFile::path_in(".").filename().string(), false, uid, gid, &ffd);
    ::close(dfd);
  }
  if (!why.empty()) return refuse("in " + target + ": " + why);
  ::close(ffd);
  return done({{"dir", dir.string()}, {"file", latency::ProbeFile::path_in(dir).string()}});
}

}  // namespace

std::optional<std::string> handle_host_verb(std::string_view line, const config::Config& own, CommandRunner& runner,
                                            uid_t peer_uid, gid_t peer_gid) {
  if (line.size() > kMaxHelperRequest) return std::nullopt;
  auto j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("verb") || !j["verb"].is_string()) return std::nullopt;
  const HostVerb* verb = nullptr;
  for (const auto& v : host_verbs())
    if (j["verb"] == v.name) verb = &v;
  if (!verb) return std::nullopt;
  Args args;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "verb") continue;
    if (std::find(verb->args.begin(), verb->args.end(), it.key()) == verb->args.end())
      return refuse("unknown key \"" + it.key() + "\" for " + verb->name);
    if (!it->is_string() || it->get<std::string>().empty() || it->get<std::string>().find('\0') != std::string::npos)
      return refuse("\"" + it.key() + "\" must be a non-empty string");
    args[it.key()] = it->get<std::string>();
  }
  for (const auto& k : verb->args)
    if (!args.count(k)) return refuse("\"" + k + "\" (a string) is required for " + verb->name);
  std::string v = verb->name;
  if (v == "counters-clear") return counters_clear(args, own, runner);
  if (v == "btrfs-device-stats") return btrfs_read(args, own, runner, {"device", "stats"});
  if (v == "btrfs-scrub-status") return btrfs_read(args, own, runner, {"scrub", "status", "-d", "-R"});
  if (v == "md-sync-action") return md_sync_action(args, own, runner, peer_uid);
  return latency_file_create(args, own, peer_uid, peer_gid);
}

}  // namespace fsaudit::canary
