#include "probes/btrfs/probe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <system_error>

#include "daemon/config/config.hpp"
#include "daemon/core/disk_identity.hpp"
#include "daemon/metrics/derive_label.hpp"
#include "daemon/core/block_device.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "daemon/core/strings.hpp"
#include "probes/btrfs/stack.hpp"
#include "probes/stack/series.hpp"

namespace fsaudit::btrfs {

namespace fs = std::filesystem;

namespace {

// Kernel block device name for a mount source ("/dev/mapper/root" -> "dm-0"), plus its dev_t.
struct SourceDevice {
  std::set<std::string> names;
  std::optional<std::pair<unsigned, unsigned>> majmin;
};

SourceDevice resolve_source(const HostPaths& host, const std::string& source) {
  SourceDevice s;
  if (source.empty()) return s;
  fs::path src(source);
  s.names.insert(src.filename().string());
  if (source.starts_with("/dev/")) {
    if (auto n = block::kernel_name(host, source)) {
      s.names.insert(*n);
      struct stat st {};
      if (::stat(host.dev(*n).c_str(), &st) == 0 && S_ISBLK(st.st_mode))
        s.majmin = std::make_pair(major(st.st_rdev), minor(st.st_rdev));
    } else {
      s.names.insert(block::kernel_name_or_target(host, source));  // /dev/mapper/x -> dm-2, node absent
    }
  }
  return s;
}

std::vector<std::string> list_dir(const fs::path& p, bool dirs_only) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
    if (dirs_only) {
      std::error_code ec2;
      if (!it->is_directory(ec2)) continue;
    }
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Absent -> nullopt; unreadable or junk -> nullopt and a problem naming the file.
std::optional<std::uint64_t> read_u64_file(const fs::path& p, std::vector<std::string>& problems) {
  auto r = read_u64(read_attribute(p, 4096));
  if (!r) {
    problems.push_back(r.error());
    return std::nullopt;
  }
  return *r;
}

bool looks_like_uuid(std::string_view s) { return s.size() == 36 && s[8] == '-' && s[13] == '-'; }

}  // namespace

std::optional<SysfsMemo::Fsid> SysfsMemo::fsid_of(const std::string& source) const {
  std::lock_guard l(mu_);
  auto it = fsids_.find(source);
  if (it == fsids_.end()) return std::nullopt;
  return it->second;
}

std::optional<SysfsMemo::Fsid> SysfsMemo::fsid_of_member(const std::string& member) const {
  std::lock_guard l(mu_);
  auto it = members_.find(member);
  if (it == members_.end()) return std::nullopt;
  return Fsid{it->second, member};
}

void SysfsMemo::remember_members(const std::vector<std::pair<std::string, std::string>>& fsid_member) {
  std::lock_guard l(mu_);
  members_.clear();  // a whole scan: what it did not see is gone
  for (const auto& [fsid, member] : fsid_member) {
    if (members_.size() >= kMaxEntries) break;
    members_.emplace(member, fsid);
  }
}

void SysfsMemo::remember_fsid(const std::string& source, Fsid f) {
  std::lock_guard l(mu_);
  if (fsids_.size() >= kMaxEntries && !fsids_.count(source)) fsids_.clear();
  fsids_[source] = std::move(f);
}

std::optional<std::map<std::uint64_t, std::string>> SysfsMemo::names_of(const std::string& fsid,
                                                                        const std::vector<std::string>& members) const {
  std::lock_guard l(mu_);
  auto it = names_.find(fsid);
  if (it == names_.end() || it->second.first != members) return std::nullopt;
  ++saved_;
  return it->second.second;
}

void SysfsMemo::remember_names(const std::string& fsid, std::vector<std::string> members,
                               std::map<std::uint64_t, std::string> names) {
  std::lock_guard l(mu_);
  if (names_.size() >= kMaxEntries && !names_.count(fsid)) names_.clear();
  names_[fsid] = {std::move(members), std::move(names)};
}

void SysfsMemo::note_saved() const {
  std::lock_guard l(mu_);
  ++saved_;
}

std::size_t SysfsMemo::lookups_saved() const {
  std::lock_guard l(mu_);
  return saved_;
}

Result<std::string> find_fsid(const HostPaths& host, const std::string& source, SysfsMemo* memo) {
  auto root = host.sys("fs/btrfs");
  auto still_there = [&](const SysfsMemo::Fsid& f) {
    std::error_code ec;
    return fs::exists(root / f.fsid / "devices" / f.member, ec);
  };
  if (memo) {
    if (auto known = memo->fsid_of(source); known && still_there(*known)) {
      memo->note_saved();
      return known->fsid;
    }
  }
  auto src = resolve_source(host, source);
  if (memo)  // the member index of an earlier scan: one lookup, not a walk over every btrfs
    for (const auto& n : src.names)
      if (auto known = memo->fsid_of_member(n); known && still_there(*known)) {
        memo->note_saved();
        memo->remember_fsid(source, *known);
        return known->fsid;
      }
  auto fsids = list_dir(root, true);
  if (fsids.empty()) return err(root.string() + " lists no btrfs filesystem (is the btrfs module loaded?)");
  // By name first, over every filesystem (directory listings only); a member's dev file is read only
  // when no name matched (a source the kernel names differently), so a lookup costs no reads per btrfs.
  std::vector<std::pair<std::string, std::string>> members;  // fsid, member
  for (const auto& id : fsids) {
    if (!looks_like_uuid(id)) continue;
    for (auto& member : list_dir(root / id / "devices", false)) members.emplace_back(id, std::move(member));
  }
  if (memo) memo->remember_members(members);
  for (const auto& [id, member] : members)
    if (src.names.count(member)) {
      if (memo) memo->remember_fsid(source, {id, member});
      return id;
    }
  std::string unreadable;  // member dev files that could not say whether they are the source
  if (src.majmin) {
    const auto want = std::to_string(src.majmin->first) + ":" + std::to_string(src.majmin->second);
    for (const auto& [id, member] : members) {
      auto dev = read_attribute(root / id / "devices" / member / "dev", 64);
      if (dev.unreadable()) unreadable += "; " + dev.reason();
      if (dev.ok() && trim(dev.text) == want) {
        if (memo) memo->remember_fsid(source, {id, member});
        return id;
      }
    }
  }
  return err("no btrfs filesystem under " + root.string() + " has the mount source '" + source +
             "' as a member device" + unreadable);
}

Result<std::uint64_t> read_superblock_devid(const fs::path& device, const std::string& fsid) {
  int fd = ::open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err("open " + device.string() + ": " + std::strerror(errno));
  std::array<unsigned char, 0x100> sb{};
  ssize_t n = ::pread(fd, sb.data(), sb.size(), 0x10000);
  int saved = errno;
  ::close(fd);
  if (n < 0) return err("read superblock of " + device.string() + ": " + std::strerror(saved));
  if (n < static_cast<ssize_t>(sb.size())) return err(device.string() + ": too short for a btrfs superblock");
  if (std::memcmp(sb.data() + 0x40, "_BHRfS_M", 8) != 0) return err(device.string() + ": no btrfs superblock magic");
  // fsid (16 bytes at 0x20) must be the sysfs directory's UUID.
  char hex[37];
  const unsigned char* u = sb.data() + 0x20;
  std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  if (fsid != hex) return err(device.string() + ": superblock fsid " + hex + " is not " + fsid);
  std::uint64_t devid = 0;
  for (int i = 7; i >= 0; --i) devid = (devid << 8) | sb[0xc9 + i];  // dev_item.devid, little endian
  return devid;
}

Result<SysfsFilesystem> read_sysfs(const HostPaths& host, const std::string& fsid, SysfsMemo* memo) {
  auto root = host.sys("fs/btrfs") / fsid;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return err(root.string() + " does not exist");
  SysfsFilesystem f;
  f.fsid = fsid;
  f.member_names = list_dir(root / "devices", false);

  std::map<std::uint64_t, std::string> names;
  if (auto known = memo ? memo->names_of(fsid, f.member_names) : std::nullopt) {
    names = std::move(*known);
  } else {
    bool all = true;
    for (const auto& m : f.member_names) {
      auto id = read_superblock_devid(host.dev(m), fsid);
      if (id) names[*id] = m;
      else all = false;
    }
    if (memo && all) memo->remember_names(fsid, f.member_names, names);
  }

  for (const auto& d : list_dir(root / "devinfo", true)) {
    auto id = parse_u64(d);
    if (!id) continue;
    SysfsDevice dev;
    dev.devid = *id;
    dev.missing = read_u64_file(root / "devinfo" / d / "missing", f.problems).value_or(0) != 0;
    auto es = read_attribute(root / "devinfo" / d / "error_stats", 4096);
    if (es.ok()) {
      auto parsed = parse_error_stats(es.text);
      if (parsed) dev.errors = *parsed;
      else {
        dev.errors_problem = parsed.error();
        f.problems.push_back((root / "devinfo" / d / "error_stats").string() + ": " + parsed.error());
      }
    } else {
      dev.errors_problem = es.reason();
      // Absent (kernel < 5.14): `btrfs device stats` gives the counters silently; unreadable or
      // junk is a failure even when the tool then gives them.
      if (es.unreadable()) f.problems.push_back(es.reason());
    }
    auto n = names.find(*id);
    if (n != names.end()) dev.name = n->second;
    f.devices.push_back(std::move(dev));
  }
  // One present member and one present devid: no superblock needed to pair them.
  std::vector<SysfsDevice*> unnamed;
  for (auto& d : f.devices)
    if (d.name.empty() && !d.missing) unnamed.push_back(&d);
  if (unnamed.size() == 1 && names.empty() && f.member_names.size() == 1) unnamed[0]->name = f.member_names[0];

  for (const auto& type : {"data", "metadata", "system"}) {
    auto tdir = root / "allocation" / type;
    for (const auto& prof : list_dir(tdir, true)) {
      AllocationProfile p;
      p.type = type;
      p.profile = prof;
      p.total_bytes = read_u64_file(tdir / prof / "total_bytes", f.problems).value_or(0);
      p.used_bytes = read_u64_file(tdir / prof / "used_bytes", f.problems).value_or(0);
      f.profiles.push_back(std::move(p));
    }
  }
  return f;
}

namespace {

const char* const kDeviceErrorsHelp =
    "btrfs per-device error counter (persistent on disk until `btrfs device stats -z`), by kind: "
    "write/read/flush I/O errors, corruption (checksum) and generation (lost write) errors.";

// A kind's counter only while it is not 0 unless `full` (btrfs.detail: full): nearly every device has
// none, and the alert fires when one rises or appears (issue 33's series budget).
void device_error_series(metrics::Batch& b, const std::string& target, const std::string& device,
                         const std::string& devid, const DeviceErrors& e, bool full) {
  const std::pair<const char*, std::uint64_t> kinds[] = {{"write", e.write},
                                                         {"read", e.read},
                                                         {"flush", e.flush},
                                                         {"corruption", e.corruption},
                                                         {"generation", e.generation}};
  for (const auto& [kind, v] : kinds)
    if (v > 0 || full)
      b.gauge("fsaudit_btrfs_device_errors", kDeviceErrorsHelp,
            {{"target", target}, {"device", device}, {"devid", devid}, {"kind", kind}}, static_cast<double>(v));
}

std::string strip_dev(const std::string& d) { return d.starts_with("/dev/") ? d.substr(5) : d; }

// Filesystem identity, member devices and their counters, block-group profiles and redundancy
// from sysfs. Fills `devid_names` (devid -> device label) for the series that only know a devid.
void sysfs_series(metrics::Batch& b, const Target& t, const SysfsFilesystem& f,
                  std::map<std::uint64_t, std::string>& devid_names, bool full) {
  const std::string& target = t.name;
  // The fsid is also the latency stack's name (fsaudit_latency_stack_info{stack="btrfs:<fsid>"}).
  if (full)
    b.info("fsaudit_btrfs_filesystem_info", "btrfs filesystem of the target (value 1): fsid.",
           {{"target", target}, {"fsid", f.fsid}});
  int missing = 0;
  for (const auto& d : f.devices) {
    std::string name = d.name.empty() ? "devid-" + std::to_string(d.devid) : d.name;
    devid_names[d.devid] = name;
    if (d.missing) ++missing;
    // Only while missing by default (btrfs.detail: full, every member): the alert asks for 1.
    if (d.missing || full)
      b.gauge("fsaudit_btrfs_device_missing", "1 if the btrfs member device is missing (devinfo/<devid>/missing).",
              {{"target", target}, {"device", name}, {"devid", std::to_string(d.devid)}}, d.missing ? 1 : 0);
    if (d.errors) device_error_series(b, target, name, std::to_string(d.devid), *d.errors, full);
    if (const auto& e = d.errors; e) {
      auto total = e->write + e->read + e->flush + e->corruption + e->generation;
      if (total > 0)
        b.status.fs(target).problems.push_back({metrics::Severity::critical,
                                                "btrfs device " + name + " has " + std::to_string(total) +
                                                    " error(s) in its counters (" + std::to_string(e->corruption) +
                                                    " checksum, " + std::to_string(e->read + e->write + e->flush) + " I/O)",
                                                "FsauditBtrfsDeviceErrorsIncreasing"});
    }
  }
  if (missing > 0)
    b.status.fs(target).problems.push_back(
        {metrics::Severity::critical, std::to_string(missing) + " btrfs member device(s) missing", "FsauditBtrfsDeviceMissing"});
  // How many members are missing is count() of fsaudit_btrfs_device_missing; the members are in
  // fsaudit_target_disk_info (issue 33's series budget).

  std::map<std::string, std::uint64_t> nonredundant;  // type -> used bytes
  for (const auto& p : f.profiles) {
    // The system block groups (the chunk tree: a few MiB, never what fills up) only with btrfs.detail: full.
    if (p.type == "system" && !full) continue;
    metrics::Labels l{{"target", target}, {"type", p.type}, {"profile", p.profile}};
    b.gauge("fsaudit_btrfs_allocated_bytes", "Bytes allocated to btrfs block groups of this type and profile.", l,
            static_cast<double>(p.total_bytes));
    b.gauge("fsaudit_btrfs_used_bytes", "Bytes used in btrfs block groups of this type and profile.", l,
            static_cast<double>(p.used_bytes));
    // Whether a profile is redundant is not a series of its own: the profile is the label above
    // (issue 33's series budget); the bytes without redundancy are summed per type below.
    nonredundant[p.type] += profile_is_redundant(p.profile) ? 0 : p.used_bytes;
  }
  // Derived from the used bytes' profile label: only on request (btrfs.detail: full).
  for (const auto& type : {"data", "metadata", "system"}) {
    if (!full || !nonredundant.count(type)) continue;
    b.gauge("fsaudit_btrfs_nonredundant_used_bytes",
            "Bytes used in btrfs block groups without redundancy (single/raid0): a checksum error there "
            "cannot be repaired.",
            {{"target", target}, {"type", type}}, static_cast<double>(nonredundant[type]));
  }
  auto model = stack_model(f);
  b.status.fs(target).redundancy = metrics::RedundancyFacts{model.margin, model.designed_redundancy, model.bad_member_texts()};
  // Whether a bad data copy can be repaired is what the layout says (fsaudit_stack_info's redundancy
  // label; fsaudit_redundancy_margin says what it survives now): a series with btrfs.detail: full.
  if (model.spare_copies && full)
    b.gauge("fsaudit_filesystem_data_redundancy",
            "1 if a bad data copy can be repaired from another copy or parity (btrfs dup/raid1*/raid10/raid5/6 "
            "data, bcachefs replicas>1); 0 if it cannot.",
            {{"target", target}, {"fs", t.fstype.empty() ? "btrfs" : t.fstype}}, *model.spare_copies > 0 ? 1 : 0);
  stack::redundancy_series(b, model, target, "btrfs");
}

// Counters from `btrfs device stats` for the devices sysfs had none for.
void device_stats_series(metrics::Batch& b, const std::string& target, const Observation& obs,
                         std::map<std::uint64_t, std::string>& devid_names, bool full) {
  std::set<std::string> have;
  if (obs.sysfs)
    for (const auto& d : obs.sysfs->devices)
      if (d.errors) have.insert(devid_names[d.devid]);
  for (const auto& e : *obs.device_stats) {
    std::string name = strip_dev(e.device);
    if (have.count(name)) continue;
    // The same devid as the device's other series: printed (-T), else the sysfs pairing by name.
    std::optional<std::uint64_t> devid = e.devid;
    for (const auto& [id, n] : devid_names)
      if (!devid && n == name) devid = id;
    device_error_series(b, target, name, devid ? std::to_string(*devid) : "", e.errors, full);
  }
}

}  // namespace

metrics::Batch btrfs_metrics(const Target& t, const Observation& obs, bool full) {
  metrics::Batch b;
  const std::string& target = t.name;
  std::map<std::uint64_t, std::string> devid_names;
  if (obs.sysfs) sysfs_series(b, t, *obs.sysfs, devid_names, full);
  if (obs.device_stats) device_stats_series(b, target, obs, devid_names, full);

  return b;
}


namespace {

using namespace fsaudit::btrfs;

class BtrfsProbe final : public Probe {
 public:
  BtrfsProbe(std::string helper, bool full) : helper_(std::move(helper)), full_(full) {}
  std::string name() const override { return "btrfs"; }
  bool applies_to(const Target& t) const override { return t.fstype == "btrfs"; }
  // sysfs (`btrfs device stats` only on kernels without error_stats there): one wake-up per cycle for all
  bool batched() const override { return true; }

  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    try {
      return run_inner(t, ctx);
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("btrfs probe: ") + e.what());
    }
  }

 private:
  CommandResult run_tool(ProbeContext& ctx, std::vector<std::string> args) {
    CommandSpec spec;
    spec.argv.push_back(ctx.tool("btrfs"));
    for (auto& a : args) spec.argv.push_back(std::move(a));
    spec.timeout = std::max(std::chrono::milliseconds(100), ctx.remaining());
    spec.max_output = 1 << 20;
    return ctx.runner.run(spec, ctx.stop);
  }

  // `btrfs ARGS MOUNTPOINT`; when it needs CAP_SYS_ADMIN that an unprivileged fsauditd lacks, the
  // same through fsaudit-helper's VERB (for a btrfs mount the helper's own config watches).
  CommandResult run_tool_or_helper(ProbeContext& ctx, std::vector<std::string> args, const std::string& mountpoint,
                                   const std::string& verb) {
    args.push_back(mountpoint);
    auto r = run_tool(ctx, std::move(args));
    if (r.ok() || helper_.empty() ||
        (r.err.find("Operation not permitted") == std::string::npos && r.err.find("Permission denied") == std::string::npos))
      return r;
    auto h = helper_call(helper_, verb, {{"mountpoint", mountpoint}}, std::max(std::chrono::milliseconds(100), ctx.remaining()));
    if (!h) {
      r.err += " (" + h.error() + ")";
      return r;
    }
    CommandResult via;
    via.exited = true;
    via.exit_code = std::atoi((*h)["exit"].c_str());
    via.out = (*h)["out"];
    return via;
  }

  ProbeResult run_inner(const Target& t, ProbeContext& ctx) {
    Observation obs;
    std::vector<std::string> problems;

    std::string fsid;
    auto id = find_fsid(ctx.host, t.source, &memo_);
    if (id) {
      fsid = *id;
      auto sys = read_sysfs(ctx.host, fsid, &memo_);
      if (sys) obs.sysfs = std::move(*sys);
      else problems.push_back(sys.error());
    } else {
      problems.push_back(id.error());
    }

    // Unreadable or junk sysfs attributes fail the probe even when the tool fills the counters in.
    std::string sysfs_why;
    if (obs.sysfs)
      for (const auto& p : obs.sysfs->problems) {
        problems.push_back(p);
        sysfs_why += (sysfs_why.empty() ? "" : "; ") + p;
      }
    bool counters_complete = obs.sysfs && !obs.sysfs->devices.empty();
    if (obs.sysfs)
      for (const auto& d : obs.sysfs->devices)
        if (!d.errors && !d.missing) {
          counters_complete = false;
          problems.push_back("devid " + std::to_string(d.devid) + ": " + d.errors_problem);
        }
    if (!counters_complete) {
      auto r = run_tool_or_helper(ctx, {"device", "stats"}, t.mountpoint, "btrfs-device-stats");
      // Exit 64/65 only come with -c; anything printed is still parsed, unless it was cut short
      // (devices after the cut would silently have no counters).
      auto parsed = r.truncated ? Result<std::vector<DeviceStatsEntry>>(err(r.describe())) : parse_device_stats(r.out);
      if (parsed) {
        // Name devices as the kernel does ("/dev/mapper/root" -> "dm-0"), like the sysfs path and the
        // kernel log watcher; keep the printed path when it cannot be resolved.
        for (auto& e : *parsed) {
          if (!e.device.starts_with("/dev/")) continue;
          auto n = block::kernel_name(ctx.host, e.device);
          if (!n) continue;
          e.device = *n;
          // Without sysfs pairing, the member's own superblock says which devid it is.
          if (!e.devid && !fsid.empty())
            if (auto d = read_superblock_devid(ctx.host.dev(*n), fsid)) e.devid = *d;
        }
        obs.device_stats = std::move(*parsed);
      }
      else problems.push_back("btrfs device stats " + t.mountpoint + ": " + (r.ok() || r.truncated ? parsed.error() : r.describe()));
    }

    auto batch = btrfs_metrics(t, obs, full_);
    for (const char* from : {"device", "member"})
      batch = metrics::with_derived_label(batch, from, "disk", [&](const std::string& d) { return block::disk_label(ctx.host, d); });
    bool have_counters = counters_complete || obs.device_stats;
    if (!have_counters) {
      std::string why;
      for (const auto& p : problems) why += (why.empty() ? "" : "; ") + p;
      if (why.empty()) why = "no btrfs data gathered";
      return ProbeResult::failed(why, std::move(batch));
    }
    if (!sysfs_why.empty()) return ProbeResult::failed(sysfs_why, std::move(batch));
    return ProbeResult::ok(std::move(batch));
  }

  std::string helper_;  // fsaudit-helper's socket ("" = none)
  const bool full_;
  SysfsMemo memo_;
};

}  // namespace

std::unique_ptr<Probe> make_btrfs_probe(const config::Config& cfg) {
  return std::make_unique<BtrfsProbe>(cfg.canary.helper, cfg.btrfs.full());
}

}  // namespace fsaudit::btrfs
