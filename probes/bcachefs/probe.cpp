#include "probes/bcachefs/probe.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "daemon/config/config.hpp"
#include "daemon/core/block_device.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::bcachefs {

namespace fs = std::filesystem;

namespace {

std::string block_name(const fs::path& dev_dir) {
  std::error_code ec;
  auto target = fs::read_symlink(dev_dir / "block", ec);
  return ec ? std::string() : target.filename().string();
}

}  // namespace

Result<std::string> find_uuid(const HostPaths& host, const std::string& source) {
  auto root = host.sys("fs/bcachefs");
  std::set<std::string> wanted;
  for (auto part : split(source, ':')) {
    if (part.empty()) continue;
    std::string p(part);
    wanted.insert(fs::path(p).filename().string());
    if (p.starts_with("/dev/")) {
      if (auto n = block::kernel_name(host, p)) wanted.insert(*n);
    }
  }
  std::vector<std::string> uuids;
  for (const auto& u : sorted_entries(root)) {
    if (u.size() != 36) continue;
    uuids.push_back(u);
    for (const auto& d : sorted_entries(root / u))
      if (d.starts_with("dev-") && wanted.count(block_name(root / u / d))) return u;
  }
  // "UUID=..." or "/dev/disk/by-uuid/<uuid>" sources name the filesystem directly.
  for (const auto& u : uuids)
    if (source.find(u) != std::string::npos) return u;
  return err("no bcachefs filesystem under " + root.string() + " has a member device of mount source '" + source + "'");
}

Result<Filesystem> read_filesystem(const HostPaths& host, const std::string& uuid, const AttributeReader& read) {
  auto root = host.sys("fs/bcachefs") / uuid;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return err(root.string() + " does not exist");
  Filesystem f;
  f.uuid = uuid;
  // Text of a file that may be absent; unreadable goes to `problems` and reads as absent.
  auto text = [&](const fs::path& p, std::vector<std::string>& problems) -> std::optional<std::string> {
    auto r = read(p).optional_text();
    if (!r) {
      problems.push_back(r.error());
      return std::nullopt;
    }
    return *r;
  };
  auto number = [&](const fs::path& p, std::vector<std::string>& problems) -> std::optional<std::uint64_t> {
    auto r = read_u64(read(p));
    if (!r) {
      problems.push_back(r.error());
      return std::nullopt;
    }
    return *r;
  };
  for (const auto& d : sorted_entries(root)) {
    if (!d.starts_with("dev-")) continue;
    Device dev;
    dev.dir = d;
    dev.name = block_name(root / d);
    if (dev.name.empty()) dev.name = d;
    std::vector<std::string> problems;
    dev.label = std::string(trim(text(root / d / "label", problems).value_or("")));
    const auto before = problems.size();
    if (auto s = text(root / d / "state_rw", problems)) dev.state = parse_state(*s);
    else if (problems.size() == before)  // absent: older kernels name it "state"
      if (auto s2 = text(root / d / "state", problems)) dev.state = parse_state(*s2);
    dev.durability = number(root / d / "durability", problems);
    auto io = read(root / d / "io_errors");
    if (io.ok()) {
      auto parsed = parse_io_errors(io.text);
      if (parsed) dev.io_errors = std::move(*parsed);
      else problems.push_back(d + "/io_errors: " + parsed.error());
    } else {
      problems.push_back(io.reason());
    }
    for (const auto& p : problems) dev.problem += (dev.problem.empty() ? "" : "; ") + p;
    f.devices.push_back(std::move(dev));
  }
  if (auto e = text(root / "errors", f.problems)) {
    auto parsed = parse_sb_errors(*e);
    if (parsed) f.sb_errors = std::move(*parsed);
    else f.problems.push_back((root / "errors").string() + ": " + parsed.error());
  }
  for (const auto& c : sorted_entries(root / "counters")) {
    if (!error_counter(c)) continue;
    const auto p = root / "counters" / c;
    auto t = text(p, f.problems);
    if (!t) continue;  // gone since the listing, or unreadable (in problems)
    auto parsed = parse_counter(*t);
    if (parsed) f.counters[c] = *parsed;
    else f.problems.push_back(p.string() + ": " + parsed.error());
  }
  f.data_replicas = number(root / "options/data_replicas", f.problems);
  f.metadata_replicas = number(root / "options/metadata_replicas", f.problems);
  return f;
}

metrics::Batch bcachefs_metrics(const Target& t, const Filesystem& f) {
  metrics::Batch b;
  static const std::vector<std::string> kStates = {"rw", "ro", "evacuating", "failed", "spare"};
  b.info("fsaudit_bcachefs_filesystem_info", "bcachefs filesystem of the target (value 1): uuid.",
         {{"target", t.name}, {"uuid", f.uuid}});
  for (const auto& d : f.devices) {
    metrics::Labels l{{"target", t.name}, {"device", d.name}};
    b.info("fsaudit_bcachefs_device_info", "bcachefs member device (value 1): sysfs directory and label.",
           {{"target", t.name}, {"device", d.name}, {"dev", d.dir}, {"label", d.label}});
    if (!d.state.empty()) {
      auto states = kStates;
      if (std::find(states.begin(), states.end(), d.state) == states.end()) states.push_back(d.state);
      b.stateset("fsaudit_bcachefs_device_state",
                 "bcachefs member state (rw, ro, evacuating, failed, spare); anything but rw needs attention.", l,
                 states, d.state);
    }
    if (d.durability)
      b.gauge("fsaudit_bcachefs_device_durability", "Copies a replica on this bcachefs device counts for.", l,
              static_cast<double>(*d.durability));
    if (d.io_errors) {
      for (const auto& [kind, n] : d.io_errors->since_creation) {
        auto lk = l;
        lk["kind"] = kind;
        b.gauge("fsaudit_bcachefs_device_errors",
                "bcachefs per-device I/O errors since filesystem creation, by kind (read, write, checksum).", lk,
                static_cast<double>(n));
        if (n > 0)
          b.status.fs(t.name).problems.push_back({metrics::Severity::critical,
                                                  "bcachefs device " + d.name + " has " + std::to_string(n) + " " + kind +
                                                      " error(s)",
                                                  "FsauditBcachefsDeviceErrorsIncreasing"});
      }
    }
  }
  for (const auto& [id, n] : f.sb_errors)
    b.gauge("fsaudit_bcachefs_errors",
            "bcachefs filesystem error counters kept in the superblock (errors file), by error id.",
            {{"target", t.name}, {"error", id}}, static_cast<double>(n));
  for (const auto& [name, c] : f.counters)
    b.counter("fsaudit_bcachefs_error_events_total",
              "bcachefs error-related event counters since filesystem creation (counters/<name>).",
              {{"target", t.name}, {"counter", name}}, c.since_creation);
  if (f.data_replicas) {
    b.gauge("fsaudit_bcachefs_data_replicas", "bcachefs data_replicas option: copies kept of each data extent.",
            {{"target", t.name}}, static_cast<double>(*f.data_replicas));
    b.gauge("fsaudit_filesystem_data_redundancy",
            "1 if a bad data copy can be repaired from another copy or parity (btrfs dup/raid1*/raid10/raid5/6 "
            "data, bcachefs replicas>1); 0 if it cannot.",
            {{"target", t.name}, {"fs", "bcachefs"}}, *f.data_replicas > static_cast<std::uint64_t>(1 + lost_devices(f)) ? 1 : 0);
  }
  if (f.metadata_replicas)
    b.gauge("fsaudit_bcachefs_metadata_replicas", "bcachefs metadata_replicas option.", {{"target", t.name}},
            static_cast<double>(*f.metadata_replicas));
  return b;
}

int lost_devices(const Filesystem& f) {
  // A failed member (or one whose block device is gone) holds no readable copy: each takes one
  // replica away, so replicas=2 with a failed member can no longer repair anything.
  int n = 0;
  for (const auto& d : f.devices)
    if (d.state == "failed" || d.name == d.dir) ++n;
  return n;
}


namespace {

class BcachefsProbe final : public Probe {
 public:
  std::string name() const override { return "bcachefs"; }
  bool batched() const override { return true; }  // sysfs reads only
  bool applies_to(const Target& t) const override { return t.fstype == "bcachefs"; }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    try {
      auto uuid = bcachefs::find_uuid(ctx.host, t.source);
      if (!uuid) return ProbeResult::failed(uuid.error());
      auto f = bcachefs::read_filesystem(ctx.host, *uuid);
      if (!f) return ProbeResult::failed(f.error());
      auto batch = bcachefs::bcachefs_metrics(t, *f);
      std::string why;
      for (const auto& d : f->devices)
        if (!d.problem.empty()) why += (why.empty() ? "" : "; ") + d.problem;
      for (const auto& p : f->problems) why += (why.empty() ? "" : "; ") + p;
      if (!why.empty()) return ProbeResult::failed(why, std::move(batch));
      return ProbeResult::ok(std::move(batch));
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("bcachefs probe: ") + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Probe> make_bcachefs_probe(const config::Config&) { return std::make_unique<BcachefsProbe>(); }

}  // namespace fsaudit::bcachefs
