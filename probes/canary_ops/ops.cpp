#include "probes/canary_ops/ops.hpp"

#include <filesystem>
#include <thread>

namespace fsaudit::canary {

namespace fs = std::filesystem;

std::vector<std::string> devices_with_new_errors(const Counters& before, const Counters& after) {
  std::vector<std::string> out;
  for (const auto& [d, n] : after.per_device) {
    auto it = before.per_device.find(d);
    if (n > (it == before.per_device.end() ? 0 : it->second)) out.push_back(d);
  }
  return out;
}

std::string canonical_member(const HostPaths& host, const std::string& name) {
  std::error_code ec;
  if (!name.empty() && name[0] == '/') {
    auto c = fs::canonical(name, ec);
    return ec ? name : c.string();
  }
  auto c = fs::canonical(host.dev(name), ec);
  return ec ? name : c.string();
}

CommandResult CanaryOps::run(std::vector<std::string> argv, std::chrono::milliseconds timeout, std::stop_token stop) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout.count() > 0 ? timeout : env_.timeout;
  return env_.runner.run(spec, stop.stop_possible() ? stop : env_.stop);
}

Result<void> CanaryOps::run_until_not_busy(const std::vector<std::string>& argv, const std::string& what) {
  CommandResult r;
  for (int i = 0; i < 20; ++i) {
    r = run(argv);
    if (r.ok()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return err(what + ": " + r.describe());
}

Result<void> CanaryOps::mount(const std::string& extra_options) {
  std::vector<std::string> argv = {env_.tool("mount"), "-t", t_.fs};
  std::string opts = t_.mount_options;
  if (!extra_options.empty()) opts += (opts.empty() ? "" : ",") + extra_options;
  if (!opts.empty()) argv.insert(argv.end(), {"-o", opts});
  argv.push_back(t_.devices.at(0));
  argv.push_back(t_.mountpoint);
  auto r = run(argv);
  if (!r.ok()) return err("mount " + t_.devices.at(0) + " " + t_.mountpoint + ": " + r.describe());
  return {};
}

Result<std::vector<std::string>> PlainOps::members() { return err("members() is only for multi-device stacks"); }

Result<void> PlainOps::take_offline() {
  return run_until_not_busy({env_.tool("umount"), t_.mountpoint}, "umount " + t_.mountpoint);
}

Result<stack::StackModel> PlainOps::model() { return stack::plain_model(t_.fs, t_.name); }

Result<void> PlainOps::build_lab(LabHost& lab, const LabSpec& spec) {
  if (!recipe_.mkfs_argv || !recipe_.image_size) return err(t_.fs + ": no lab recipe");
  const std::string mkfs = recipe_.mkfs_argv("", "").at(0);
  if (find_tool(mkfs).empty()) return err(mkfs + " not installed", ErrorKind::not_installed);
  auto d = lab.loop_device(spec.name + ".img", recipe_.image_size(spec));
  if (!d) return err(d.error());
  t_.devices = {*d};
  if (auto r = lab.run(recipe_.mkfs_argv(*d, "fsaudit-lab")); !r.ok()) return err(mkfs + ": " + r.describe());
  return lab.mount(*d, t_.mountpoint, {"-t", t_.fs});
}

ScrubOutcome PlainOps::scrub() {
  ScrubOutcome o;
  o.supported = false;
  o.summary = t_.fs + " has no data scrub (unsupported)";
  return o;
}

}  // namespace fsaudit::canary
