#include "probes/setup/gather.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <functional>
#include <set>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/bcachefs/probe.hpp"
#include "probes/capacity/statfs_helper.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/stack.hpp"
#include "probes/scrub_driver/drivers.hpp"
#include "probes/scrub_driver/model.hpp"
#include "probes/setup/nocow.hpp"
#include "probes/setup/rules.hpp"
#include "probes/zfs/stack.hpp"

namespace fsaudit::setup {

namespace fs = std::filesystem;

namespace {

// Fewer writes than this say nothing about a workload's I/O size.
constexpr std::uint64_t kMinWritesForIoSize = 1000;

std::optional<std::string> read_trim(const fs::path& p) {
  auto t = read_file(p, 4096);
  if (!t) return std::nullopt;
  return std::string(trim(*t));
}

std::vector<std::string> list_names(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

CommandResult run_tool(GatherEnv& env, std::vector<std::string> argv) {
  CommandSpec spec;
  // Own key: the zfs probe may run the same `zpool status` at this moment; sharing its key would
  // make one of them fail as busy.
  std::string key = "setup";
  for (const auto& a : argv) key += " " + a;
  spec.key = key;
  spec.argv = std::move(argv);
  spec.timeout = env.timeout;
  spec.max_output = 4 << 20;
  return env.runner.run(spec, env.stop);
}

std::string transport_of(const HostPaths& host, const std::string& disk) {
  if (auto t = read_trim(host.sys("block/" + disk + "/device/transport")); t && !t->empty()) return to_lower(*t);
  if (disk.starts_with("loop")) return "loop";
  if (disk.starts_with("dm-")) return "dm";
  if (disk.starts_with("md")) return "md";
  if (disk.starts_with("zram")) return "zram";
  std::error_code ec;
  auto c = fs::canonical(host.sys("block/" + disk), ec).string();
  if (ec) c = fs::read_symlink(host.sys("class/block/" + disk), ec).string();
  if (c.find("/nvme") != std::string::npos) return "nvme";
  if (c.find("/usb") != std::string::npos) return "usb";
  if (c.find("/ata") != std::string::npos) return "sata";
  if (c.find("virtio") != std::string::npos) return "virtio";
  if (c.find("/sas") != std::string::npos || c.find("/expander") != std::string::npos) return "sas";
  if (c.find("/mmc") != std::string::npos) return "mmc";
  return "";
}

std::string dataset_of(const std::string& source) { return source.substr(0, source.find('@')); }

// Dataset properties every ZFS generation knows (zfs-fuse too); an unknown one would fail the call.
const char kDatasetProps[] = "checksum,copies,compression,recordsize";

// The properties of every mounted ZFS dataset, a few commands for all of them. A dataset missing
// from the answer (unmounted meanwhile: zfs names it on stderr and exits 1, the others are printed)
// is asked for alone later, so its own error is what gets reported.
const PropertyTable& all_dataset_props(GatherEnv& env) {
  if (env.zfs_props) return *env.zfs_props;
  env.zfs_props.emplace();
  std::set<std::string> datasets;
  for (const auto& m : env.mounts)
    if (normalize_fs(m.fstype) == "zfs" && !m.source.empty()) datasets.insert(dataset_of(m.source));
  std::vector<std::string> argv;
  auto ask = [&] {
    auto r = run_tool(env, argv);
    if (r.spawn_error.empty() && !r.timed_out && !r.truncated)
      if (auto t = parse_property_table(r.out)) env.zfs_props->merge(*t);
  };
  for (const auto& d : datasets) {
    if (argv.empty()) argv = {env.tool("zfs"), "get", "-Hp", kDatasetProps};
    argv.push_back(d);
    if (argv.size() == 4 + 256) {
      ask();
      argv.clear();
    }
  }
  if (!argv.empty()) ask();
  return *env.zfs_props;
}

void zfs_facts(StackFacts& f, GatherEnv& env) {
  const std::string dataset = dataset_of(f.source);
  std::string pool = zfs_pool_of(dataset);
  CommandResult r;
  Result<PropertyTable> t = err("");
  if (const auto& all = all_dataset_props(env); all.count(dataset)) {
    r.exited = true;
    r.exit_code = 0;
    t = PropertyTable{{dataset, all.at(dataset)}};
  } else {
    r = run_tool(env, {env.tool("zfs"), "get", "-Hp", kDatasetProps, dataset});
    if (r.ok()) t = parse_property_table(r.out);
  }
  if (r.ok()) {
    if (t && t->count(dataset)) {
      const auto& p = t->at(dataset);
      ZfsDatasetFacts d;
      d.name = dataset;
      auto get = [&](const char* k) -> std::optional<std::string> {
        auto it = p.find(k);
        if (it == p.end() || it->second == "-") return std::nullopt;
        return it->second;
      };
      d.checksum = get("checksum");
      d.compression = get("compression");
      if (auto c = get("copies")) d.copies = static_cast<int>(parse_u64(*c).value_or(1));
      if (auto rs = get("recordsize"))
        if (auto b = property_bytes(*rs)) d.recordsize = static_cast<std::uint64_t>(*b);
      f.zdataset = d;
    } else {
      f.problems.push_back("zfs get " + dataset + ": " + (t ? "dataset not in the output" : t.error()));
    }
  } else {
    f.problems.push_back("zfs get " + dataset + ": " + r.describe());
  }

  // The application's write size on this dataset, where OpenZFS keeps per-dataset kstats.
  for (const auto& n : list_names(env.host.proc("spl/kstat/zfs/" + pool))) {
    if (!n.starts_with("objset-")) continue;
    auto t = read_file(env.host.proc("spl/kstat/zfs/" + pool + "/" + n), 64 << 10);
    if (!t) continue;
    auto o = parse_objset_kstat(*t);
    if (!o || o->dataset != dataset) continue;
    if (o->writes >= kMinWritesForIoSize)
      f.measured_io_bytes = static_cast<double>(o->nwritten) / static_cast<double>(o->writes);
    break;
  }
  if (!env.zpool_status) {
    auto s = run_tool(env, {env.tool("zpool"), "status"});
    if (s.ok()) env.zpool_status = zfs::parse_zpool_status(s.out);
    else env.zpool_status = Result<zfs::ZfsStatusReport>(err("zpool status: " + s.describe()));
  }
  if (!*env.zpool_status) {
    f.problems.push_back(env.zpool_status->error());
    return;
  }
  const zfs::ZfsPoolStatus* ps = nullptr;
  for (const auto& p : (*env.zpool_status)->pools)
    if (p.name == pool) ps = &p;
  if (!ps) {
    f.problems.push_back("pool " + pool + " not in zpool status");
    return;
  }
  zfs::DatasetShape shape;
  if (f.zdataset && f.zdataset->copies) shape.copies = *f.zdataset->copies;
  shape.checksum = data_checksummed(f).value_or(true);
  f.model = zfs::stack_model(*ps, shape);
  ZfsPoolFacts pf;
  pf.name = pool;
  auto layout = zfs_layout(*ps);
  for (const auto& leaf : layout.leaves) {
    bool is_path = !leaf.empty() && leaf[0] == '/' && !leaf.starts_with("/dev/");
    if (is_path) {
      struct stat st{};
      fs::path p = env.host.rootfs / fs::path(leaf).relative_path();
      if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        ZfsVdevFacts v;
        v.name = leaf;
        v.is_file = true;
        if (const auto* m = containing_mount(env.mounts, leaf)) {
          v.backing_fs = m->fstype;
          v.backing_mount = m->mountpoint;
        }
        pf.stacked.push_back(v);
        continue;
      }
    }
    auto name = kernel_name_for(env.host, leaf);
    if (name.empty()) continue;
    auto bd = describe_block(env.host, name, env.mounts);
    if (!bd.loop_backing_file.empty())
      pf.stacked.push_back(ZfsVdevFacts{leaf, false, bd.loop_backing_fs, bd.loop_backing_mount});
    f.devices.push_back(bd);
  }
  // zpool get: -Hp where supported (OpenZFS), else the plain table (zfs-fuse rejects -H and -p).
  if (!env.zpool_props.count(pool)) {
    std::optional<PropertyTable> props;
    for (const auto& argv : {std::vector<std::string>{env.tool("zpool"), "get", "-Hp", "all", pool},
                             std::vector<std::string>{env.tool("zpool"), "get", "all", pool}}) {
      auto g = run_tool(env, argv);
      if (!g.ok()) continue;
      if (auto t = parse_property_table(g.out); t && t->count(pool)) {
        props = *t;
        break;
      }
    }
    env.zpool_props[pool] = props;
  }
  if (const auto& props = env.zpool_props[pool]; props) {
    const auto& p = props->at(pool);
    if (auto it = p.find("ashift"); it != p.end())
      if (auto v = parse_u64(it->second)) pf.ashift = static_cast<int>(*v);
    if (auto it = p.find("autotrim"); it != p.end() && (it->second == "on" || it->second == "off"))
      pf.autotrim = it->second == "on";
    if (auto it = p.find("capacity"); it != p.end()) pf.capacity_percent = property_percent(it->second);
    if (auto it = p.find("size"); it != p.end()) pf.size_bytes = property_bytes(it->second);
  } else {
    f.problems.push_back("zpool get all " + pool + " failed in both forms");
  }
  f.zpool = pf;
}

void btrfs_facts(StackFacts& f, GatherEnv& env) {
  auto fsid = btrfs::find_fsid(env.host, f.source);
  if (!fsid) {
    f.problems.push_back(fsid.error());
    return;
  }
  if (auto sf = btrfs::read_sysfs(env.host, *fsid)) f.model = btrfs::stack_model(*sf, data_checksummed(f).value_or(true));
  else f.problems.push_back(sf.error());
  BtrfsFacts b;
  b.fsid = *fsid;
  auto root = env.host.sys("fs/btrfs/" + *fsid);
  std::uint64_t disk_total = 0;
  bool totals = true;
  for (const char* type : {"data", "metadata", "system"}) {
    auto dir = root / "allocation" / type;
    for (const auto& n : list_names(dir)) {
      if (!fs::is_directory(dir / n)) continue;
      // Profile directories (single, dup, raid1, ...) exist while chunks of that profile exist.
      if (std::string(type) == "data") b.data_profiles.push_back(n);
      if (std::string(type) == "metadata") b.metadata_profiles.push_back(n);
    }
    auto dt = read_trim(dir / "disk_total");
    auto v = dt ? parse_u64(*dt) : std::nullopt;
    if (v) disk_total += *v;
    else totals = false;
  }
  std::uint64_t dev_total = 0;
  for (const auto& m : list_names(root / "devices")) {
    auto sz = read_trim(env.host.sys("class/block/" + m + "/size"));
    auto v = sz ? parse_u64(*sz) : std::nullopt;
    if (v) dev_total += *v * 512;
    else totals = false;
    f.devices.push_back(describe_block(env.host, m, env.mounts));
  }
  if (totals && dev_total >= disk_total) b.unallocated_bytes = dev_total - disk_total;
  if (env.scan_nocow && env.cfg.nocow_scan) {
    NocowOptions o;
    o.max_depth = env.cfg.nocow_max_depth;
    o.max_entries = env.cfg.nocow_max_entries;
    for (const auto& m : env.mounts)
      if (m.mountpoint != f.mountpoint) o.skip.insert(m.mountpoint);
    o.skip.insert((fs::path(f.mountpoint) / ".fsaudit").string());  // fsaudit's own latency probe file
    b.nocow = scan_nocow(f.mountpoint, o);
  }
  f.btrfs = b;
}

void bcachefs_facts(StackFacts& f, GatherEnv& env) {
  auto uuid = bcachefs::find_uuid(env.host, f.source);
  if (!uuid) {
    f.problems.push_back(uuid.error());
    return;
  }
  BcachefsFacts b;
  auto fsr = bcachefs::read_filesystem(env.host, *uuid);
  if (fsr) {
    b.data_replicas = fsr->data_replicas;
    b.metadata_replicas = fsr->metadata_replicas;
    for (const auto& d : fsr->devices)
      if (!d.name.empty() && d.name != d.dir) f.devices.push_back(describe_block(env.host, d.name, env.mounts));
  } else {
    f.problems.push_back(fsr.error());
  }
  auto opts = env.host.sys("fs/bcachefs/" + *uuid + "/options");
  if (auto v = read_trim(opts / "data_checksum")) b.data_checksum = bcachefs::parse_state(*v);
  if (auto v = read_trim(opts / "compression")) b.compression = bcachefs::parse_state(*v);
  f.bcachefs = b;
}

void block_facts(StackFacts& f, GatherEnv& env, unsigned major, unsigned minor) {
  std::string name;
  std::error_code ec;
  auto c = fs::canonical(env.host.sys("dev/block/" + std::to_string(major) + ":" + std::to_string(minor)), ec);
  if (!ec) name = c.filename().string();
  if (name.empty() && f.source.starts_with("/dev/")) name = kernel_name_for(env.host, f.source);
  if (name.empty()) {
    f.problems.push_back("no block device for " + f.source);
    return;
  }
  std::vector<std::string> leaves;
  f.lower = lower_layers(env.host, name, &leaves);
  for (const auto& l : leaves) f.devices.push_back(describe_block(env.host, l, env.mounts));
}

void scrub_facts(StackFacts& f, GatherEnv& env) {
  scrub::ScrubTarget st;
  st.fs = f.fs;
  st.name = f.fs == "zfs" ? zfs_pool_of(f.source) : f.target;
  auto text = read_file(env.state_dir / "scrub" / (st.key() + ".state"));
  if (!text) return;
  auto s = scrub::TargetState::parse(*text);
  ScrubFacts sf;
  sf.first_seen = s.first_seen;
  sf.last_completed_end = s.last_completed_end;
  sf.unsupported_reason = s.unsupported_reason;
  f.scrub = sf;
}

}  // namespace

std::string kernel_release(const HostPaths& host) { return read_trim(host.proc("sys/kernel/osrelease")).value_or(""); }

std::string kernel_name_for(const HostPaths& host, const std::string& v) {
  std::vector<fs::path> tries;
  if (v.starts_with("/dev/")) tries.push_back(host.dev(v.substr(5)));
  else if (!v.empty() && v[0] == '/') tries.push_back(host.rootfs / fs::path(v).relative_path());
  else
    for (const char* d : {"", "disk/by-id/", "disk/by-vdev/", "disk/by-path/", "disk/by-partuuid/", "disk/by-uuid/",
                          "mapper/"})
      tries.push_back(host.dev(std::string(d) + v));
  for (const auto& p : tries) {
    std::error_code ec;
    auto c = fs::canonical(p, ec);
    if (ec) continue;
    auto n = c.filename().string();
    if (fs::exists(host.sys("class/block/" + n))) return n;
  }
  if (fs::exists(host.sys("class/block/" + v))) return v;  // already a kernel name
  return "";
}

BlockDevice describe_block(const HostPaths& host, const std::string& name, const std::vector<MountEntry>& mounts) {
  BlockDevice d;
  d.name = name;
  d.disk = name;
  auto cls = host.sys("class/block/" + name);
  if (fs::exists(cls / "partition")) {
    std::error_code ec;
    auto c = fs::canonical(cls, ec);
    if (!ec) d.disk = c.parent_path().filename().string();
  }
  auto q = host.sys("block/" + d.disk + "/queue");
  if (auto r = read_trim(q / "rotational")) d.rotational = *r == "1";
  if (auto p = read_trim(q / "physical_block_size"))
    if (auto v = parse_u64(*p)) d.physical_block_size = *v;
  if (auto m = read_trim(host.sys("block/" + d.disk + "/device/model"))) d.model = *m;
  d.transport = transport_of(host, d.disk);
  if (d.disk.starts_with("loop")) {
    if (auto b = read_trim(host.sys("block/" + d.disk + "/loop/backing_file")); b && !b->empty()) {
      d.loop_backing_file = *b;
      if (const auto* m = containing_mount(mounts, *b)) {
        d.loop_backing_fs = m->fstype;
        d.loop_backing_mount = m->mountpoint;
      }
    }
  }
  return d;
}

LowerLayers lower_layers(const HostPaths& host, const std::string& top, std::vector<std::string>* leaves) {
  LowerLayers l;
  std::vector<std::string> desc;
  std::set<std::string> seen;
  std::function<void(const std::string&, int)> walk = [&](const std::string& n, int depth) {
    if (depth > 8 || !seen.insert(n).second) return;
    auto base = host.sys("class/block/" + n);
    auto slaves = list_names(base / "slaves");
    if (n.starts_with("md")) {
      auto level = read_trim(base / "md/level").value_or("");
      if (level.starts_with("raid") && level != "raid0" && l.raid.empty()) l.raid = "md-" + level;
      std::string s;
      for (const auto& x : slaves) s += " " + x;
      desc.push_back(n + " (" + (level.empty() ? "md" : level) + ") over" + s);
    } else if (n.starts_with("dm-")) {
      auto uuid = read_trim(base / "dm/uuid").value_or("");
      auto dmname = read_trim(base / "dm/name").value_or("");
      if (uuid.starts_with("CRYPT-INTEGRITY") || dmname.find("_imeta") != std::string::npos ||
          dmname.find("_iorig") != std::string::npos)
        l.integrity = true;
      if (uuid.starts_with("LVM-")) {
        bool raid = false;
        for (const auto& s : slaves) {
          auto sn = read_trim(host.sys("class/block/" + s + "/dm/name")).value_or("");
          if (sn.find("_rimage_") != std::string::npos) raid = true;
        }
        if (raid && l.raid.empty()) l.raid = "lvm-raid";
        if (raid) desc.push_back(n + " (" + dmname + ", LVM RAID)");
      }
    }
    if (slaves.empty()) {
      if (leaves && !n.starts_with("dm-") && !n.starts_with("md")) leaves->push_back(n);
      return;
    }
    for (const auto& s : slaves) walk(s, depth + 1);
  };
  walk(top, 0);
  for (const auto& d : desc) l.description += (l.description.empty() ? "" : "; ") + d;
  return l;
}

StackFacts gather_facts(const Target& t, GatherEnv& env) {
  StackFacts f;
  f.target = t.name;
  f.fs = normalize_fs(t.fstype);
  f.mountpoint = t.mountpoint;
  f.source = t.source;
  f.options = t.mount_options + (t.super_options.empty() ? "" : "," + t.super_options);
  f.now = env.now;
  if (!env.kernel) env.kernel = kernel_release(env.host);
  f.kernel_release = *env.kernel;
  if (!t.mountpoint.empty()) {
    struct statvfs sv{};
    // In a helper process: a hung filesystem must not hold this thread in the kernel for good.
    auto r = capacity::shared_statfs_helpers().statvfs(t.mountpoint, &sv, env.stop, SystemClock::instance(),
                                                     SteadyTime::max());
    if (r && *r == 0) {
      f.size_bytes = static_cast<double>(sv.f_blocks) * sv.f_frsize;
      f.used_bytes = static_cast<double>(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    }
  }
  if (f.fs == "zfs") zfs_facts(f, env);
  else if (f.fs == "btrfs") btrfs_facts(f, env);
  else if (f.fs == "bcachefs") bcachefs_facts(f, env);
  else block_facts(f, env, t.dev_major, t.dev_minor);
  scrub_facts(f, env);
  return f;
}

}  // namespace fsaudit::setup
