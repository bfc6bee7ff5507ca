#include "probes/xfs/probe.hpp"

#include <filesystem>
#include <set>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/ext4/block_name.hpp"
#include "probes/xfs/health.hpp"

namespace fsaudit::xfs {

namespace fs = std::filesystem;

ErrorConfig read_error_config(const fs::path& dir, const AttributeReader& read) {
  ErrorConfig c;
  auto number = [&](const fs::path& p) -> std::optional<std::int64_t> {
    auto r = read_i64(read(p));
    if (!r) c.problems.push_back(r.error());
    return r ? *r : std::nullopt;
  };
  if (auto v = number(dir / "error/fail_at_unmount")) c.fail_at_unmount = *v != 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir / "error/metadata", ec), end; !ec && it != end; it.increment(ec)) {
    auto cls = it->path().filename().string();
    if (auto v = number(it->path() / "max_retries")) c.max_retries[cls] = *v;
    if (auto v = number(it->path() / "retry_timeout_seconds")) c.retry_timeout_seconds[cls] = *v;
  }
  return c;
}

metrics::Batch xfs_metrics(const Target& t, const Observation& o, bool diagnostic_series) {
  metrics::Batch b;
  metrics::Labels l{{"target", t.name}, {"device", o.device}};
  b.gauge("fsaudit_xfs_shutdown",
          "1 if the XFS filesystem has shut down (fatal metadata/log I/O error; xfs_spaceman gets EIO): it must be "
          "unmounted and repaired.",
          l, o.shutdown ? 1 : 0);
  if (o.shutdown)
    b.status.fs(t.name).problems.push_back(
        {metrics::Severity::critical, "XFS on " + o.device + " has shut down: unmount it and run xfs_repair", "FsauditXfsShutdown"});
  if (o.health && o.health->unhealthy() > 0)
    b.status.fs(t.name).problems.push_back({metrics::Severity::warning,
                                            "XFS marked " + std::to_string(o.health->unhealthy()) +
                                                " metadata structure(s) unhealthy",
                                            "FsauditXfsUnhealthyMetadata"});
  if (o.health) {
    if (diagnostic_series)
      b.gauge("fsaudit_xfs_health_collected",
              "1 if XFS has health information for this filesystem (from runtime corruption detection or online "
              "scrub); 0 = nothing checked yet.",
              l, o.health->collected ? 1 : 0);
    b.gauge("fsaudit_xfs_unhealthy_metadata",
            "Number of XFS metadata structures the kernel has marked unhealthy (xfs_spaceman -c health).", l,
            static_cast<double>(o.health->unhealthy()));
    std::map<std::pair<std::string, std::string>, std::size_t> per;  // (scope, metadata) -> unhealthy count
    for (const auto& i : o.health->items) per[{i.scope, i.metadata}] += i.healthy ? 0 : 1;
    for (const auto& [k, n] : per) {
      auto lk = l;
      lk["scope"] = k.first;
      lk["metadata"] = k.second;
      b.gauge("fsaudit_xfs_health_unhealthy",
              "XFS metadata marked unhealthy, by scope (filesystem, ag, rtgroup, inode) and structure: how many "
              "groups/inodes are affected (0 = checked and ok).",
              lk, static_cast<double>(n));
    }
  }
  if (o.error_config && diagnostic_series) {
    const auto& c = *o.error_config;
    if (c.fail_at_unmount)
      b.gauge("fsaudit_xfs_error_fail_at_unmount",
              "XFS error/fail_at_unmount: 1 if pending metadata write retries are abandoned at unmount.", l,
              *c.fail_at_unmount ? 1 : 0);
    for (const auto& [cls, v] : c.max_retries) {
      auto lk = l;
      lk["error"] = cls;
      b.gauge("fsaudit_xfs_error_max_retries",
              "XFS error/metadata/<class>/max_retries: retries of a failed metadata write before shutdown "
              "(-1 = retry forever, which can hang the filesystem on a dying disk).",
              lk, static_cast<double>(v));
    }
    for (const auto& [cls, v] : c.retry_timeout_seconds) {
      auto lk = l;
      lk["error"] = cls;
      b.gauge("fsaudit_xfs_error_retry_timeout_seconds",
              "XFS error/metadata/<class>/retry_timeout_seconds (-1 = no time limit).", lk, static_cast<double>(v));
    }
  }
  return b;
}

}  // namespace fsaudit::xfs

namespace fsaudit::xfs {

namespace {

class XfsProbe final : public Probe {
 public:
  explicit XfsProbe(bool diagnostic_series) : diagnostic_series_(diagnostic_series) {}
  std::string name() const override { return "xfs"; }
  bool applies_to(const Target& t) const override { return t.fstype == "xfs"; }
  // sysfs, and the health record through the statfs helper: one wake-up per cycle for all targets
  bool batched() const override { return true; }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    try {
      xfs::Observation o;
      std::vector<std::string> problems;
      o.device = ext4::sysfs_fs_dir_name(ctx.host, t, "xfs");
      if (!o.device.empty()) o.error_config = xfs::read_error_config(ctx.host.sys("fs/xfs") / o.device);
      else problems.push_back("no " + ctx.host.sys("fs/xfs").string() + "/<dev> directory for " + t.mountpoint);

      // The kernel's health record through a helper process; xfs_spaceman only where the kernel
      // cannot give it that way (health.hpp).
      auto hr = read_health(capacity::shared_statfs_helpers(), t.mountpoint, ctx.stop, ctx.clock, ctx.deadline);
      if (hr.health) {
        o.health = std::move(hr.health);
      } else if (hr.err == EIO) {
        o.shutdown = true;
      } else if (!hr.use_fallback()) {
        problems.push_back(hr.error);
      } else {
        CommandSpec spec;
        spec.argv = {ctx.tool("xfs_spaceman"), "-c", "health", t.mountpoint};
        spec.timeout = std::max(std::chrono::milliseconds(100), ctx.remaining());
        spec.max_output = 1 << 20;
        auto r = ctx.runner.run(spec, ctx.stop);
        auto all = r.out + r.err;
        if (r.exited && r.exit_code != 0 && all.find("Input/output error") != std::string::npos) {
          o.shutdown = true;
        } else if (r.ok()) {
          auto h = xfs::parse_spaceman_health(all);
          if (h) o.health = std::move(*h);
          else problems.push_back(h.error());
        } else {
          problems.push_back(hr.error + "; xfs_spaceman -c health " + t.mountpoint + ": " + r.describe());
        }
      }
      auto batch = xfs::xfs_metrics(t, o, diagnostic_series_);
      if (o.error_config && !o.error_config->problems.empty()) {
        // Health was read, but a setting that is there could not be: fail rather than hide it.
        for (const auto& p : o.error_config->problems) problems.push_back(p);
        if (o.health || o.shutdown) {
          std::string why;
          for (const auto& p : o.error_config->problems) why += (why.empty() ? "" : "; ") + p;
          return ProbeResult::failed(why, std::move(batch));
        }
      }
      if (!o.health && !o.shutdown) {
        std::string why;
        for (const auto& p : problems) why += (why.empty() ? "" : "; ") + p;
        return ProbeResult::failed(why, std::move(batch));
      }
      return ProbeResult::ok(std::move(batch));
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("xfs probe: ") + e.what());
    }
  }

 private:
  bool diagnostic_series_;
};

}  // namespace

std::unique_ptr<Probe> make_xfs_probe(const config::Config& c) {
  return std::make_unique<XfsProbe>(c.xfs.diagnostic_series());
}

}  // namespace fsaudit::xfs
