#include "daemon/core/disk_identity.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "daemon/core/block_device.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::block {

namespace fs = std::filesystem;

namespace {

std::string read_trim(const fs::path& p) {
  auto t = read_file(p, 4096);
  return t ? std::string(trim(*t)) : std::string();
}

// The bus a disk hangs off, from where sysfs puts it: .../pci.../nvme/..., .../usbN/..., .../ataN/...
std::string transport_of(const std::string& name, const fs::path& sysdir) {
  if (name.starts_with("loop")) return "loop";
  if (name.starts_with("md")) return "md";
  if (name.starts_with("dm-")) return "dm";
  const std::string p = sysdir.string();
  if (p.find("/nvme") != std::string::npos) return "nvme";
  if (p.find("/usb") != std::string::npos) return "usb";
  if (p.find("/ata") != std::string::npos) return "sata";
  if (p.find("/end_device-") != std::string::npos || p.find("/expander-") != std::string::npos) return "sas";
  if (p.find("/virtio") != std::string::npos) return "virtio";
  if (p.find("/mmc") != std::string::npos) return "mmc";
  if (p.find("/target") != std::string::npos) return "scsi";
  return "";
}

void walk(const HostPaths& host, const std::string& name, std::set<std::string>& out, int depth) {
  if (depth > 16) {  // sysfs stacks are a few levels deep; a loop in a fixture tree must still end
    out.insert(name);
    return;
  }
  std::error_code ec;
  const auto cls = host.sys("class/block") / name;
  if (!fs::exists(cls, ec)) return;  // not a block device now: no guess that could name the wrong disk
  if (fs::exists(cls / "partition", ec)) {
    auto disk = parent_disk(host, name);
    if (disk != name) return walk(host, disk, out, depth + 1);
  }
  auto below = sorted_entries(cls / "slaves");
  if (below.empty())
    for (const auto& e : sorted_entries(cls / "md"))
      if (e.starts_with("dev-")) below.push_back(e.substr(4));
  if (below.empty()) {
    out.insert(name);
    return;
  }
  for (const auto& b : below) walk(host, b, out, depth + 1);
}

}  // namespace

ByIdLinks by_id_links(const HostPaths& host) {
  ByIdLinks out;
  const auto dir = host.dev("disk/by-id");
  for (const auto& link : sorted_entries(dir))
    if (auto k = kernel_name(host, "/dev/disk/by-id/" + link)) out[*k].push_back((dir / link).string());
  return out;
}

namespace {

// What sysfs says of a disk: everything of DiskIdentity but the by-id links.
DiskIdentity read_identity(const HostPaths& host, const std::string& name) {
  DiskIdentity id;
  id.name = name;
  std::error_code ec;
  const auto cls = host.sys("class/block") / id.name;
  auto sysdir = fs::canonical(cls, ec);
  if (ec) sysdir = cls;
  // A partition has no serial or WWN of its own: its disk's (the parent directory) are the drive's.
  for (const fs::path& d : {sysdir, sysdir.parent_path()}) {
    if (id.wwn.empty()) id.wwn = read_trim(d / "wwid");
    if (id.wwn.empty()) id.wwn = read_trim(d / "device" / "wwid");
    if (id.serial.empty()) id.serial = read_trim(d / "serial");
    if (id.serial.empty()) id.serial = read_trim(d / "device" / "serial");
    if (id.model.empty()) id.model = read_trim(d / "device" / "model");
  }
  id.backing_file = read_trim(sysdir / "loop" / "backing_file");
  id.transport = transport_of(id.name, sysdir);
  return id;
}

void add_links(DiskIdentity& id, const ByIdLinks& links) {
  if (auto it = links.find(id.name); it != links.end()) id.by_id = it->second;
}

}  // namespace

DiskIdentity identify(const HostPaths& host, std::string_view name_in, const ByIdLinks* links) {
  auto id = read_identity(host, std::string(name_in));
  if (links) add_links(id, *links);
  else add_links(id, by_id_links(host));
  return id;
}

DiskIdentity IdentityCache::identify(const HostPaths& host, const std::string& name, const ByIdLinks& links) {
  auto seq = read_trim(host.sys("class/block") / name / "diskseq");
  auto it = known_.find(name);
  if (!seq.empty() && it != known_.end() && it->second.diskseq == seq) {
    ++saved_;
    auto id = it->second.id;
    add_links(id, links);
    return id;
  }
  auto id = read_identity(host, name);
  if (seq.empty()) known_.erase(name);
  else known_[name] = {seq, id};
  add_links(id, links);
  return id;
}

void IdentityCache::retain(const std::set<std::string>& names) {
  std::erase_if(known_, [&](const auto& kv) { return !names.count(kv.first); });
}

std::vector<std::string> whole_disks(const HostPaths& host, std::string_view device) {
  auto name = kernel_name(host, device);
  if (!name) return {};
  std::set<std::string> out;
  walk(host, *name, out, 0);
  return {out.begin(), out.end()};
}

std::string disk_label(const HostPaths& host, std::string_view device) {
  std::string s;
  for (const auto& d : whole_disks(host, device)) s += (s.empty() ? "" : ",") + d;
  return s;
}

}  // namespace fsaudit::block
