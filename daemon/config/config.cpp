#include "daemon/config/config.hpp"

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::config {

const std::vector<ProbeType>& probe_types() {
  using namespace std::chrono_literals;
  static const std::vector<ProbeType> types = {
      {"capacity", ProbeSettings{true, 30s, 2s, 10s}, "capacity",
       [](Section s, Config& c) { c.capacity.detail = parse_detail(std::move(s)).detail; }},
      {"mount", ProbeSettings{true, 15s, 1s, 10s}, "", nullptr},
      {"zfs", ProbeSettings{true, 30s, 2s, 20s}, "zfs", [](Section s, Config& c) { c.zfs.detail = parse_detail(std::move(s)).detail; }},
      {"btrfs", ProbeSettings{true, 30s, 2s, 20s}, "btrfs",
       [](Section s, Config& c) { c.btrfs.detail = parse_detail(std::move(s)).detail; }},
      {"bcachefs", ProbeSettings{true, 30s, 2s, 20s}, "", nullptr},
      {"xfs", ProbeSettings{true, 60s, 3s, 20s}, "xfs", [](Section s, Config& c) { c.xfs.detail = parse_detail(std::move(s)).detail; }},
      {"ext4", ProbeSettings{true, 60s, 3s, 10s}, "ext4",
       [](Section s, Config& c) { c.ext4.detail = parse_detail(std::move(s)).detail; }},
      {"md", ProbeSettings{true, 30s, 2s, 10s}, "", nullptr},
      {"disk", ProbeSettings{true, 5min, 10s, 20s}, "", nullptr},
      // timeout: the whole run; one smartctl call gets at most smart.call_timeout (60 s) of it.
      {"smart", ProbeSettings{true, 30min, 1min, 10min}, "smart",
       [](Section s, Config& c) { c.smart = parse_smart(std::move(s)); }},
      {"kernel_log", ProbeSettings{true, 5s, 0s, 10s}, "kernel_log",
       [](Section s, Config& c) { c.kernel_log = parse_kernel_log(std::move(s)); }},
      {"canary", std::nullopt, "canary", [](Section s, Config& c) { c.canary = parse_canary(std::move(s)); }},
      {"latency", std::nullopt, "latency", [](Section s, Config& c) { c.latency = parse_latency(std::move(s)); }},
      {"scrub", ProbeSettings{true, 30s, 2s, 20s}, "scrub",
       [](Section s, Config& c) { c.scrub = parse_scrub(std::move(s)); }},
      {"setup", ProbeSettings{true, 15min, 30s, 60s}, "setup",
       [](Section s, Config& c) { c.setup = parse_setup(std::move(s)); }},
  };
  return types;
}

TargetSelection without_canaries(TargetSelection sel, const CanaryConfig& canary) {
  for (const auto& c : canary.canaries)
    if (!c.mountpoint.empty()) sel.exclude.push_back(c.mountpoint);
  return sel;
}

const ProbeSettings& Config::schedule(const std::string& probe) const {
  static const ProbeSettings fallback;
  auto it = probes.find(probe);
  return it == probes.end() ? fallback : it->second;
}

namespace {

void parse_listen(Section& s, Config& c) {
  std::string listen = s.string("listen", c.listen_address + ":" + std::to_string(c.listen_port));
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    s.fail("listen", "expected ADDRESS:PORT such as 127.0.0.1:9717, found \"" + listen + "\"");
  auto port = parse_u64(listen.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535)
    s.fail("listen", "port must be 1-65535 in \"" + listen + "\" (e.g. 127.0.0.1:9717)");
  std::string addr = listen.substr(0, colon);
  if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']') addr = addr.substr(1, addr.size() - 2);
  c.listen_address = addr;
  c.listen_port = static_cast<int>(*port);
}

void parse_targets(Section t, Config& c) {
  c.targets.discover = t.boolean("discover", true);
  c.targets.include = t.strings("include", {"*"});
  c.targets.exclude = t.strings("exclude", {});
  c.targets.fstypes = t.strings("fstypes", {});
  for (auto e : t.list("explicit")) {
    ExplicitTarget et;
    et.path = e.string("path", "");
    if (et.path.empty() || et.path[0] != '/') e.fail("path", "every explicit target needs an absolute path");
    et.name = e.string("name", "");
    e.finish();
    c.targets.explicit_targets.push_back(et);
  }
  t.finish();
}

void parse_host(Section h, Config& c) {
  c.host.procfs = h.string("procfs", "/proc");
  c.host.sysfs = h.string("sysfs", "/sys");
  c.host.devfs = h.string("devfs", "/dev");
  c.host.rootfs = h.string("rootfs", "/");
  h.finish();
}

void parse_probes(Section& s, Config& c) {
  std::vector<std::string> names;
  for (const auto& type : probe_types()) {
    if (!type.schedule) continue;
    names.push_back(type.name);
    c.probes[type.name] = *type.schedule;
  }
  for (auto& [name, p] : s.named_sections("probes", names)) {
    auto& sched = c.probes[name];
    sched.enabled = p.boolean("enabled", sched.enabled);
    sched.interval = p.duration("interval", sched.interval, std::chrono::milliseconds(100), std::chrono::days(31));
    sched.jitter = p.duration("jitter", sched.jitter, std::chrono::milliseconds(0), std::chrono::days(1));
    sched.timeout = p.duration("timeout", sched.timeout, std::chrono::milliseconds(100), std::chrono::days(1));
    p.finish();
  }
}

void parse_probe_budget(Section b, Config& c) {
  c.probe_budget.runs_per_second =
      static_cast<double>(b.integer("runs_per_second", static_cast<std::int64_t>(c.probe_budget.runs_per_second), 0, 100000));
  b.finish();
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& file_label) {
  Config c;
  c.source = file_label;
  Section root = open_document(yaml_text, file_label);
  parse_listen(root, c);
  c.web_config_file = root.string("web_config_file", "");
  c.dbus_address = root.string("dbus_address", "system");
  if (!c.web_config_file.empty() && c.web_config_file[0] != '/')
    root.fail("web_config_file", "must be an absolute path such as /etc/fsaudit/web.yaml");
  c.state_dir = root.string("state_dir", c.state_dir.string());
  if (c.state_dir.empty() || !c.state_dir.is_absolute())
    root.fail("state_dir", "must be an absolute path such as /var/lib/fsaudit");
  c.log_level = root.choice("log_level", "info", {"trace", "debug", "info", "warning", "error"});
  c.workers = static_cast<int>(root.integer("workers", 4, 1, 64));
  parse_host(root.section("host"), c);
  c.tools = root.string_map("tools");
  parse_targets(root.section("targets"), c);
  parse_probes(root, c);
  parse_probe_budget(root.section("probe_budget"), c);
  for (const auto& type : probe_types())
    if (type.parse_section) type.parse_section(root.section(type.section), c);
  root.finish();
  return c;
}

Config load_config_file(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) throw ConfigError(text.error());
  return parse_config(*text, path.string());
}

Config default_config() { return parse_config("{}", "(defaults)"); }

}  // namespace fsaudit::config
