#include "daemon/config/config.hpp"
#include "fsauditd/probes.hpp"

#include <map>
#include <stdexcept>

#include "daemon/systemd/logging.hpp"
#include "probes/bcachefs/probe.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/lab.hpp"
#include "probes/canary/probe.hpp"
#include "probes/capacity/probe.hpp"
#include "probes/disk/probe.hpp"
#include "probes/ext4/probe.hpp"
#include "probes/kernel_log/probe.hpp"
#include "probes/latency/probe.hpp"
#include "probes/md/probe.hpp"
#include "probes/mount/probe.hpp"
#include "probes/scrub/probe.hpp"
#include "probes/setup/probe.hpp"
#include "probes/xfs/probe.hpp"
#include "probes/zfs/probe.hpp"

namespace fsaudit::fsauditd {

namespace {

using Probes = std::vector<std::unique_ptr<Probe>>;

// What probes of one daemon share.
struct Shared {
  std::shared_ptr<zfs::StatusShare> zpool_status = std::make_shared<zfs::StatusShare>();
};
using Factory = Probes (*)(const config::Config&, Shared&);

template <std::unique_ptr<Probe> (*Make)(const config::Config&)>
Probes one(const config::Config& cfg, Shared&) {
  Probes v;
  v.push_back(Make(cfg));
  return v;
}
template <Probes (*Make)(const config::Config&)>
Probes many(const config::Config& cfg, Shared&) {
  return Make(cfg);
}
Probes zfs_probe(const config::Config& cfg, Shared& s) {
  Probes v;
  v.push_back(zfs::make_zfs_probe(cfg, s.zpool_status));
  return v;
}
Probes scrub_probe(const config::Config& cfg, Shared& s) {
  Probes v;
  v.push_back(scrub::make_scrub_probe(cfg, s.zpool_status));
  return v;
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {
      {"capacity", one<capacity::make_capacity_probe>},
      {"mount", one<mount::make_mount_probe>},
      {"zfs", zfs_probe},
      {"btrfs", one<btrfs::make_btrfs_probe>},
      {"bcachefs", one<bcachefs::make_bcachefs_probe>},
      {"xfs", one<xfs::make_xfs_probe>},
      {"ext4", one<ext4::make_ext4_probe>},
      {"md", one<md::make_md_probe>},
      {"disk", one<disk::make_disk_probe>},
      {"smart", one<disk::make_smart_probe>},
      {"kernel_log", one<kernel_log::make_kernel_log_probe>},
      {"canary", many<canary::make_canary_probes>},
      {"latency", many<latency::make_latency_probes>},
      {"scrub", scrub_probe},
      {"setup", one<setup::make_setup_probe>},
  };
  return f;
}

class CanaryLab : public app::LabHandle {
 public:
  explicit CanaryLab(std::unique_ptr<canary::Lab> lab) : lab_(std::move(lab)) {}
  void add_to(config::Config& cfg) const override { lab_->add_to(cfg); }

 private:
  std::unique_ptr<canary::Lab> lab_;
};

std::unique_ptr<app::LabHandle> start_canary_lab(config::Config& cfg) {
  spdlog::info("lab mode: building loop-device canaries (this takes a few seconds)");
  auto lab = canary::Lab::setup(cfg);
  if (!lab) {
    logging::log(spdlog::level::err, "lab mode: " + lab.error());
    return nullptr;
  }
  for (const auto& w : (*lab)->warnings()) logging::log(spdlog::level::warn, "lab mode: " + w);
  spdlog::info("lab mode: {} canaries under {}", (*lab)->canaries().size(), (*lab)->dir().string());
  return std::make_unique<CanaryLab>(std::move(*lab));
}

}  // namespace

std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg) {
  const auto& f = factories();
  if (f.size() != config::probe_types().size())
    throw std::logic_error("probe factories and config::probe_types() list different probes");
  Probes probes;
  Shared shared;
  for (const auto& type : config::probe_types()) {
    auto it = f.find(type.name);
    if (it == f.end()) throw std::logic_error("probe type " + type.name + " has no factory in fsauditd/probes.cpp");
    for (auto& p : it->second(cfg, shared)) probes.push_back(std::move(p));
  }
  return probes;
}

app::Extensions extensions() {
  app::Extensions e;
  e.make_probes = make_probes;
  e.config_metrics = [](const config::Config& cfg) { return canary::canary_identity_batch(cfg.canary, cfg.host); };
  e.skip_once = [](const Probe& p) { return canary::canary_schedule(p).has_value(); };
  e.init_target = [](const config::Config& cfg, const std::string& target, CommandRunner& runner) {
    return canary::init_canary(cfg, target, runner);
  };
  e.start_lab = start_canary_lab;
  return e;
}

}  // namespace fsaudit::fsauditd
