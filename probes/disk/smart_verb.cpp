#include "probes/disk/smart_verb.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace fsaudit::disk {

namespace fs = std::filesystem;
using nlohmann::json;

Result<void> check_smart_disk(const HostPaths& host, const std::string& disk) {
  auto no = [](std::string why) { return err(std::move(why), ErrorKind::refused); };
  // Letters and digits, a letter first: no path, no option, no "..", nothing smartctl would read as
  // anything but the device it names.
  if (disk.empty() || disk.size() > 32 || !(disk[0] >= 'a' && disk[0] <= 'z') ||
      disk.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos)
    return no("\"" + disk.substr(0, 64) + "\" is not a disk's kernel name (letters and digits, such as sda or nvme0n1)");
  std::error_code ec;
  auto cls = host.sys("class/block") / disk;
  if (!fs::exists(cls, ec)) return no("no block device " + disk + " on this host (" + cls.string() + ")");
  if (fs::exists(cls / "partition", ec)) return no(disk + " is a partition, not a whole disk");
  if (fs::exists(cls / "slaves", ec) && !fs::is_empty(cls / "slaves", ec))
    return no(disk + " is a layer over other devices (dm, md), not a disk");
  return {};
}

std::vector<std::string> smartctl_argv(const std::string& smartctl, const std::string& disk) {
  return {smartctl, "--json", "-a", "-n", "standby", "/dev/" + disk};
}

namespace {
std::string refuse(const std::string& why) { return json{{"ok", false}, {"refused", why}}.dump() + "\n"; }
}  // namespace

std::optional<std::string> handle_smart_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner) {
  auto j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("verb") || j["verb"] != kSmartVerb) return std::nullopt;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "verb" && it.key() != "disk")
      return refuse("unknown key \"" + it.key() + "\" for " + kSmartVerb + ": it takes a disk, nothing else");
  if (!j.contains("disk") || !j["disk"].is_string()) return refuse("\"disk\" (a string) is required for smart-read");
  const std::string disk = j["disk"].get<std::string>();
  if (auto disk_ok = check_smart_disk(own.host, disk); !disk_ok) return refuse(disk_ok.error());
  CommandSpec spec;
  auto it = own.tools.find("smartctl");
  spec.argv = smartctl_argv(it == own.tools.end() || it->second.empty() ? std::string("smartctl") : it->second, disk);
  // The helper's own (root-owned) configuration bounds the call, never the daemon's request.
  spec.timeout = std::min<std::chrono::milliseconds>(own.smart.call_timeout, own.schedule("smart").timeout);
  spec.max_output = 4 << 20;
  auto r = runner.run(spec);
  const std::string what = "smartctl " + disk;
  if (r.timed_out)
    return refuse(what + ": killed after " + std::to_string(spec.timeout.count()) + " ms without an answer (hung device?)");
  if (!r.exited || r.truncated) return refuse(what + ": " + r.describe());
  return json{{"ok", true}, {"result", {{"disk", disk}, {"exit", r.exit_code}, {"out", r.out}}}}.dump() + "\n";
}

}  // namespace fsaudit::disk
