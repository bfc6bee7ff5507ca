#include "probes/mount/probe.hpp"
#include "daemon/config/config.hpp"
#include "daemon/core/fstype.hpp"

#include <mutex>
#include <string_view>
#include <unordered_map>

#include "daemon/core/strings.hpp"
#include "daemon/probe/same_as_last.hpp"

namespace fsaudit::mount {

bool has_data_checksums(const std::string& fstype, const std::string& mount_options,
                        const std::string& super_options) {
  auto has = [&](std::string_view opt) {
    for (const auto* opts : {&mount_options, &super_options})
      for (auto o : split(*opts, ','))
        if (o == opt) return true;
    return false;
  };
  if (fstype == "btrfs") return !has("nodatasum") && !has("nodatacow");
  if (fstype::is_zfs(fstype)) return true;
  if (fstype == "bcachefs") return !has("data_checksum=none");
  return false;
}

metrics::Batch mount_metrics(const Target& t, const MountEntry* e) {
  metrics::Batch b;
  metrics::Labels l{{"target", t.name}, {"fs", t.fstype}};
  if (!e) return b;
  b.gauge("fsaudit_filesystem_readonly",
          "1 if the filesystem is read-only (mount or superblock option ro, e.g. after the kernel remounted it "
          "read-only on errors).",
          l, e->read_only() ? 1 : 0);
  b.info("fsaudit_filesystem_info", "Mount details of the target (value 1).",
         {{"target", t.name},
          {"fs", e->fstype},
          {"device", e->source},
          {"mountpoint", e->mountpoint},
          {"options", e->mount_options + (e->super_options.empty() ? "" : ";" + e->super_options)}});
  // Whether data is checksummed is fsaudit_stack_info's data_checksums label (probes/setup), not a series
  // of its own here: one fact, one series (issue 33's series budget).
  auto& f = b.status.fs(t.name);
  f.fs = e->fstype;
  f.source = e->source;
  f.mounted = true;
  f.readonly = e->read_only();
  f.data_checksums = has_data_checksums(e->fstype, e->mount_options, e->super_options);
  if (e->read_only())
    f.problems.push_back({metrics::Severity::warning, "mounted read-only (the kernel may have remounted it after errors)",
                          "FsauditFilesystemRemountedReadOnly"});
  return b;
}

namespace {

class MountProbe final : public Probe {
 public:
  std::string name() const override { return "mount"; }
  bool batched() const override { return true; }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    auto mounts = mount_table(ctx);  // the cycle's snapshot: no read of mountinfo per target
    if (!mounts) return ProbeResult::failed(mounts.error());
    const MountEntry* found = find(*mounts, t.mountpoint);
    if (!found) {
      metrics::Batch b;  // no series (the failure says it), but the page must say it plainly
      auto& f = b.status.fs(t.name);
      f.fs = t.fstype;
      f.mounted = false;
      f.problems.push_back({metrics::Severity::critical, "not mounted: " + t.mountpoint + " is not in the mount table",
                            "FsauditProbeFailing"});
      return ProbeResult::failed("not mounted: " + t.mountpoint + " is not in the mount table", std::move(b));
    }
    Fingerprint fp;
    fp.add(t.name).add(t.fstype).add(found->fstype).add(found->source).add(found->mountpoint);
    fp.add(found->mount_options).add(found->super_options);
    if (last_.same(t.name, fp.value(), ctx)) return ProbeResult::same_as_last();
    return ProbeResult::ok(mount_metrics(t, found));
  }

 private:
  // One index per snapshot, not a scan of the table per target: with a thousand mounts that scan
  // made a cycle a million string compares. Views into the snapshot, which indexed_ keeps alive: a copy
  // of every mount point was 0.9 MB at 10,000 mounts.
  const MountEntry* find(const MountSnapshot& snap, const std::string& mountpoint) {
    std::lock_guard l(mu_);
    if (snap != indexed_) {
      index_.clear();
      index_.reserve(snap->size());
      for (std::size_t i = 0; i < snap->size(); ++i) index_[(*snap)[i].mountpoint] = i;  // the last one is the visible one
      indexed_ = snap;
    }
    auto it = index_.find(mountpoint);
    return it == index_.end() ? nullptr : &(*snap)[it->second];
  }

  LastPublished last_;
  std::mutex mu_;
  MountSnapshot indexed_;
  std::unordered_map<std::string_view, std::size_t> index_;
};

}  // namespace

std::unique_ptr<Probe> make_mount_probe(const config::Config&) { return std::make_unique<MountProbe>(); }

}  // namespace fsaudit::mount
