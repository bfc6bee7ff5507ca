#include "probes/setup/coverage.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "daemon/core/strings.hpp"
#include "probes/setup/rules.hpp"

namespace fsaudit::setup {

namespace {

std::string joined(std::set<std::string> v) {
  v.erase("");
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "+") + x;
  return s;
}

std::string compression_algo(std::string v) {
  v = to_lower(v);
  auto colon = v.find(':');
  if (colon != std::string::npos) v = v.substr(0, colon);  // zstd:3 -> zstd
  if (v.empty() || v == "no" || v == "none" || v == "off" || v == "false") return "off";
  return v;
}

std::string models(const std::vector<BlockDevice>& d, bool transport) {
  std::set<std::string> s;
  for (const auto& x : d) s.insert(transport ? x.transport : x.model);
  return joined(s);
}

std::string ago(double secs) {
  char b[64];
  if (secs < 7200) std::snprintf(b, sizeof b, "%.0f min", secs / 60);
  else std::snprintf(b, sizeof b, "%.1f h", secs / 3600);
  return b;
}

}  // namespace

std::string redundancy_of(const StackFacts& f) {
  // btrfs and ZFS say themselves what they are (the stack model's layout).
  if (f.fs == "btrfs" || f.fs == "zfs") return f.model && !f.model->layout.empty() ? f.model->layout : "unknown";
  if (f.fs == "bcachefs") {
    if (!f.bcachefs || !f.bcachefs->data_replicas) return "unknown";
    return *f.bcachefs->data_replicas > 1 ? "replicas" : "single";
  }
  return f.lower.raid.empty() ? "plain" : f.lower.raid;
}

static std::string compression_of(const StackFacts& f) {
  if (f.fs == "btrfs") {
    auto v = f.option_value("compress-force");
    if (!v) v = f.option_value("compress");
    return v ? compression_algo(*v) : "off";
  }
  if (f.fs == "zfs") return f.zdataset && f.zdataset->compression ? compression_algo(*f.zdataset->compression) : "unknown";
  if (f.fs == "bcachefs") {
    auto v = f.option_value("compression");
    if (!v && f.bcachefs && f.bcachefs->compression) v = f.bcachefs->compression;
    return v ? compression_algo(*v) : "off";
  }
  return "off";
}

Signature stack_signature(const StackFacts& f) {
  auto dc = data_checksummed(f);
  return {{"fs", f.fs},
          {"data_checksums", dc ? (*dc ? "on" : "off") : "unknown"},
          {"redundancy", redundancy_of(f)},
          {"compression", compression_of(f)},
          {"kernel_release", f.kernel_release},
          {"device_model", models(f.devices, false)},
          {"device_transport", models(f.devices, true)}};
}

Signature canary_signature(const config::CanaryTarget& c, const StackFacts* live, const std::vector<BlockDevice>& devices,
                           const std::string& kernel_release) {
  if (live) {
    auto s = stack_signature(*live);
    // A canary's own layout word wins where the live facts could not tell (e.g. pool not readable).
    if (s["redundancy"] == "unknown") s["redundancy"] = normalize_layout(c.fs, c.layout);
    return s;
  }
  StackFacts f;
  f.fs = c.fs;
  f.options = c.mount_options;
  f.kernel_release = kernel_release;
  f.devices = devices;
  Signature s = {{"fs", c.fs},
                 {"data_checksums", "off"},
                 {"redundancy", normalize_layout(c.fs, c.layout)},
                 {"compression", c.fs == "zfs" ? "unknown" : compression_of(f)},
                 {"kernel_release", kernel_release},
                 {"device_model", models(devices, false)},
                 {"device_transport", models(devices, true)}};
  if (c.fs == "zfs") s["data_checksums"] = "on";
  if (c.fs == "btrfs") s["data_checksums"] = data_checksummed(f).value_or(true) ? "on" : "off";
  return s;
}

Coverage evaluate_coverage(const Signature& target, const std::vector<CanaryProof>& canaries,
                           const config::SetupConfig& cfg, double now) {
  Coverage best;
  std::string near;  // the closest miss, for the reason
  double grace = std::chrono::duration<double>(cfg.coverage_grace).count();
  for (const auto& c : canaries) {
    std::vector<std::string> diff;
    for (const auto& field : cfg.coverage_match) {
      auto a = target.find(field), b = c.signature.find(field);
      std::string va = a == target.end() ? "" : a->second, vb = b == c.signature.end() ? "" : b->second;
      if (va != vb) diff.push_back(field + " " + vb + " != " + va);
    }
    if (!diff.empty()) {
      if (near.empty() || diff.size() == 1) {
        near = "canary " + c.name + " differs: ";
        for (std::size_t i = 0; i < diff.size(); ++i) near += (i ? ", " : "") + diff[i];
      }
      continue;
    }
    if (!c.has_run) {
      best.reason = "canary " + c.name + " matches but has not completed a cycle yet";
      continue;
    }
    double age = now - c.finished;
    if (!c.expectation_met) {
      best.reason = "canary " + c.name + " matches but its last cycle (" + c.verdict + ", " + ago(age) +
                    " ago) did not meet its expectation (" + c.expect + ")";
      continue;
    }
    if (age > c.interval_seconds + grace) {
      best.reason = "canary " + c.name + " matches but last met its expectation " + ago(age) + " ago (interval " +
                    ago(c.interval_seconds) + " + grace " + ago(grace) + ")";
      continue;
    }
    return Coverage{true, c.name, "canary " + c.name + " (" + c.verdict + ", expected " + c.expect + ") " + ago(age) + " ago"};
  }
  if (best.reason.empty()) {
    best.reason = canaries.empty() ? "no canary configured" : "no canary with this stack";
    if (!near.empty()) best.reason += "; closest: " + near;
  }
  return best;
}

std::string suggest_canary(const StackFacts& f, const config::SetupConfig& cfg) {
  auto sig = stack_signature(f);
  std::string red = sig["redundancy"];
  std::ostringstream o;
  std::string name = "cover-";
  for (char ch : f.target == "/" ? std::string("root") : f.target)
    name += (std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-');
  while (name.find("--") != std::string::npos) name.replace(name.find("--"), 2, "-");
  if (name.back() == '-') name.pop_back();
  if (name.size() > 64) name.resize(64);
  std::string fs = f.fs;
  bool supported = fs == "btrfs" || fs == "zfs" || fs == "xfs" || fs == "ext4";
  o << "# Stack of " << f.target << ":";
  for (const auto& [k, v] : sig) o << " " << k << "=" << (v.empty() ? "\"\"" : v);
  o << "\n# Coverage compares:";
  for (const auto& m : cfg.coverage_match) o << " " << m;
  o << " (setup.coverage.match)\n";
  if (!supported) {
    o << "# fsaudit has no canary support for " << fs << " yet: this stack cannot be covered.\n";
    return o.str();
  }
  int devices = 1;
  if (red == "raid1" || red == "mirror" || red == "md-raid1" || red == "lvm-raid") devices = 2;
  else if (red == "raid1c3" || red == "raid5" || red == "raidz1") devices = 3;
  else if (red == "raid1c4" || red == "raid10" || red == "raid6" || red == "raidz2") devices = 4;
  else if (red == "raidz3") devices = 5;
  std::string model = sig["device_model"], transport = sig["device_transport"];
  o << "# Put it on small dedicated partitions (a few hundred MiB) of the same disks or the same model\n"
    << "# (" << (model.empty() ? "model unknown" : model) << ", " << (transport.empty() ? "transport unknown" : transport)
    << "), one per member; every byte on them is overwritten.\n"
    << "# Then: fsauditd canary init " << name << " --config FILE\n"
    << "canary:\n  canaries:\n"
    << "    - name: " << name << "\n"
    << "      fs: " << fs << "\n"
    << "      layout: " << (red == "unknown" || red.empty() ? "single" : red) << "\n"
    << "      devices:\n";
  for (int i = 1; i <= devices; ++i) o << "        - /dev/disk/by-id/REPLACE-WITH-PARTITION-" << i << "\n";
  o << "      mountpoint: /var/lib/fsaudit/canary/" << name << "\n";
  if (fs == "zfs") o << "      pool: fsaudit-" << name << "\n";
  std::string opts;
  if (fs == "btrfs") {
    for (const char* k : {"nodatasum", "nodatacow"})
      if (f.has_option(k)) opts += std::string(opts.empty() ? "" : ",") + k;
    if (auto c = f.option_value("compress-force")) opts += (opts.empty() ? "" : ",") + std::string("compress-force=") + *c;
    else if (auto c2 = f.option_value("compress")) opts += (opts.empty() ? "" : ",") + std::string("compress=") + *c2;
  }
  if (!opts.empty()) o << "      mount_options: \"" << opts << "\"   # as production\n";
  if (fs == "zfs" && f.zdataset) {
    o << "      # create the canary pool like production:";
    if (f.zdataset->checksum) o << " -O checksum=" << *f.zdataset->checksum;
    if (f.zdataset->compression) o << " -O compression=" << *f.zdataset->compression;
    if (f.zdataset->copies) o << " -O copies=" << *f.zdataset->copies;
    o << "\n";
  }
  if (sig["compression"] != "off" && sig["compression"] != "unknown")
    o << "      # production compresses (" << sig["compression"]
      << "): the canary's pattern is incompressible, so injection still works\n";
  o << "      interval: 24h\n"
    << "      window: \"*\"\n";
  return o.str();
}

}  // namespace fsaudit::setup
