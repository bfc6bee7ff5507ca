#include "probes/capacity/probe.hpp"

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "daemon/config/config.hpp"
#include "daemon/probe/same_as_last.hpp"
#include "probes/capacity/statfs_helper.hpp"

namespace fsaudit::capacity {

CapacityStats capacity_from_statvfs(const struct statvfs& s) {
  double frsize = static_cast<double>(s.f_frsize ? s.f_frsize : s.f_bsize);
  CapacityStats c;
  c.size_bytes = static_cast<double>(s.f_blocks) * frsize;
  c.free_bytes = static_cast<double>(s.f_bfree) * frsize;
  c.avail_bytes = static_cast<double>(s.f_bavail) * frsize;
  c.files = static_cast<double>(s.f_files);
  c.files_free = static_cast<double>(s.f_ffree);
  return c;
}

metrics::Batch capacity_metrics(const Target& t, const CapacityStats& c, bool free_bytes_series) {
  metrics::Batch b;
  metrics::Labels l{{"target", t.name}, {"fs", t.fstype}};
  b.gauge("fsaudit_filesystem_size_bytes", "Filesystem size in bytes (statvfs f_blocks * f_frsize).", l, c.size_bytes);
  if (free_bytes_series)
    b.gauge("fsaudit_filesystem_free_bytes", "Free bytes, including those reserved for root.", l, c.free_bytes);
  b.gauge("fsaudit_filesystem_avail_bytes", "Bytes available to unprivileged users.", l, c.avail_bytes);
  // A filesystem without a fixed inode table (btrfs) says 0 inodes: no inode figure, not a full one.
  if (c.files > 0) {
    b.gauge("fsaudit_filesystem_files", "Total inodes (absent where the filesystem has no fixed inode table).", l,
            c.files);
    b.gauge("fsaudit_filesystem_files_free", "Free inodes.", l, c.files_free);
  }
  // The fill rules (almost full, full in N days) are the alert rules' and are applied by the page.
  auto& f = b.status.fs(t.name);
  f.fs = t.fstype;
  f.size_bytes = c.size_bytes;
  f.avail_bytes = c.avail_bytes;
  if (c.files > 0) {
    f.files = c.files;
    f.files_free = c.files_free;
  }
  return b;
}

namespace {

class CapacityProbe final : public Probe {
 public:
  explicit CapacityProbe(bool free_bytes_series) : free_bytes_series_(free_bytes_series) {}
  std::string name() const override { return "capacity"; }
  bool batched() const override { return true; }
  // The cycle's statfs calls go to the helper together: a few wake-ups per cycle, not two per target.
  void prepare_batch(const std::vector<const Target*>& targets, ProbeContext& ctx) override {
    std::vector<std::string> paths;
    paths.reserve(targets.size());
    for (const Target* t : targets) paths.push_back(path_of(*t, ctx));
    helpers_.prefetch(paths, ctx.stop, ctx.clock, std::min(ctx.deadline, ctx.clock.now() + kPrefetchWait));
  }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    const std::string p = path_of(t, ctx);
    struct statvfs s {};
    auto r = helpers_.statvfs(p, &s, ctx.stop, ctx.clock, ctx.deadline);
    if (!r) return ProbeResult::failed("statvfs " + p + ": " + r.error());
    if (*r != 0) return ProbeResult::failed("statvfs " + p + ": " + std::strerror(*r));
    const CapacityStats c = capacity_from_statvfs(s);
    Fingerprint fp;
    fp.add(t.name).add(t.fstype).add(c.size_bytes).add(c.free_bytes).add(c.avail_bytes).add(c.files).add(c.files_free);
    if (last_.same(t.name, fp.value(), ctx)) return ProbeResult::same_as_last();  // an idle filesystem
    return ProbeResult::ok(capacity_metrics(t, c, free_bytes_series_));
  }

 private:
  // How long the batch waits before it leaves a slow path to its own run (a healthy statfs takes µs).
  static constexpr std::chrono::seconds kPrefetchWait{1};
  static std::string path_of(const Target& t, const ProbeContext& ctx) {
    return (ctx.host.rootfs / std::filesystem::path(t.mountpoint).relative_path()).string();
  }
  const bool free_bytes_series_;
  StatfsHelpers helpers_;
  LastPublished last_;
};

}  // namespace

std::unique_ptr<Probe> make_capacity_probe(const config::Config& c) {
  return std::make_unique<CapacityProbe>(c.capacity.free_bytes_series());
}

}  // namespace fsaudit::capacity
