#include "probes/canary/identity.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <nlohmann/json.hpp>

#include "daemon/core/block_device.hpp"
#include "daemon/core/disk_identity.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/canary/scanner.hpp"
#include "probes/canary/state_json.hpp"

namespace fsaudit::canary {

std::string_view to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::block: return "block";
    case DeviceKind::loop: return "loop";
    case DeviceKind::file: return "file";
    case DeviceKind::unknown: break;
  }
  return "";
}

DeviceKind device_kind(std::string_view s) {
  for (auto k : {DeviceKind::block, DeviceKind::loop, DeviceKind::file})
    if (s == to_string(k)) return k;
  return DeviceKind::unknown;
}

namespace fs = std::filesystem;
using nlohmann::json;
namespace sj = state_json;

Result<DeviceIdentity> identify_device(const std::string& path, const HostPaths& host) {
  DeviceIdentity id;
  id.path = path;
  std::error_code ec;
  auto res = fs::canonical(path, ec);
  if (ec) return err("device " + path + " does not exist: " + ec.message());
  id.resolved = res.string();
  struct stat st {};
  if (::stat(id.resolved.c_str(), &st) != 0) return err("cannot stat " + id.resolved);
  if (S_ISREG(st.st_mode)) {
    id.kind = DeviceKind::file;
    id.size = static_cast<std::uint64_t>(st.st_size);
    id.inode = st.st_ino;
    id.fs_dev = st.st_dev;
    return id;
  }
  if (!S_ISBLK(st.st_mode)) return err(id.resolved + " is neither a block device nor a regular file");
  id.major = ::major(st.st_rdev);
  id.minor = ::minor(st.st_rdev);
  auto sz = device_size(id.resolved);
  if (!sz) return err(sz.error());
  id.size = *sz;
  auto name = block::name_of_devnum(host, id.major, id.minor);
  if (!name) {
    id.kind = DeviceKind::block;
    return id;
  }
  auto disk = block::identify(host, *name);
  id.kind = disk.backing_file.empty() ? DeviceKind::block : DeviceKind::loop;
  id.backing_file = disk.backing_file;
  id.serial = disk.serial;
  id.wwid = disk.wwn;
  id.by_id = disk.by_id;
  return id;
}

Result<void> weak_identity(const DeviceIdentity& id) {
  bool strong = !id.wwid.empty() || !id.serial.empty() || !id.by_id.empty() ||
                (id.kind == DeviceKind::loop && !id.backing_file.empty()) || (id.kind == DeviceKind::file && id.inode != 0);
  if (strong) return {};
  return err(id.path + " has no stable identity (no WWN, serial, /dev/disk/by-id link, loop backing file or file inode): "
                   "another device could take its name after a reboot or replug", ErrorKind::refused);
}

Result<void> identity_mismatch(const DeviceIdentity& r, const DeviceIdentity& n) {
  std::string who = r.path;
  // A record without a stable field is matched on nothing that tells devices apart: refused.
  if (auto weak = weak_identity(r); !weak)
    return err(weak.error() + "; re-run canary init on a device that has one", ErrorKind::refused);
  if (r.kind != n.kind)
    return err(who + " was a " + std::string(to_string(r.kind)) + " device at init, now it is a " +
           std::string(to_string(n.kind)), ErrorKind::refused);
  if (r.size != n.size)
    return err(who + " changed size: " + std::to_string(r.size) + " bytes at init, now " + std::to_string(n.size), ErrorKind::refused);
  if (r.kind == DeviceKind::file) {
    if (r.resolved != n.resolved || r.inode != n.inode || r.fs_dev != n.fs_dev)
      return err(who + " is no longer the same file (path/inode changed since init)", ErrorKind::refused);
    return {};
  }
  if (r.kind == DeviceKind::loop) {
    if (r.backing_file != n.backing_file)
      return err(who + " is backed by \"" + n.backing_file + "\", at init it was \"" + r.backing_file + "\"", ErrorKind::refused);
    return {};
  }
  if (!r.wwid.empty() && r.wwid != n.wwid) return err(who + " WWN changed: \"" + r.wwid + "\" -> \"" + n.wwid + "\"", ErrorKind::refused);
  if (!r.serial.empty() && r.serial != n.serial)
    return err(who + " serial changed: \"" + r.serial + "\" -> \"" + n.serial + "\"", ErrorKind::refused);
  if (r.wwid.empty() && r.serial.empty()) {
    if (!r.by_id.empty() && r.by_id != n.by_id) return err(who + " by-id links changed since init", ErrorKind::refused);
    if (r.by_id.empty() && r.resolved != n.resolved)
      return err(who + " resolves to " + n.resolved + ", at init it was " + r.resolved, ErrorKind::refused);
  }
  return {};
}

fs::path canary_state_dir(const fs::path& state_dir, const std::string& name) {
  return state_dir / "canary" / name;
}

namespace {
json to_json(const DeviceIdentity& d) {
  return json{{"path", d.path},       {"resolved", d.resolved}, {"kind", to_string(d.kind)},
              {"size", d.size},       {"major", d.major},       {"minor", d.minor},
              {"serial", d.serial},   {"wwid", d.wwid},         {"by_id", d.by_id},
              {"backing_file", d.backing_file}, {"inode", d.inode}, {"fs_dev", d.fs_dev}};
}
// Assigns a field, or says what is wrong with it; every field save_record writes is required.
template <class T, class R>
std::string take(R r, T& out, const char* key) {
  if (!r) return r.error();
  if (!*r) return std::string("\"") + key + "\" is missing";
  out = static_cast<T>(**r);
  return "";
}

// A record names a handful of members; more is not a record fsaudit wrote.
constexpr std::size_t kMaxDevices = 64;

Result<DeviceIdentity> device_from_json(const json& j) {
  if (!j.is_object()) return err("a device is not an object");
  DeviceIdentity d;
  std::string kind;
  std::uint64_t major = 0, minor = 0;
  for (auto why : {take(sj::string_field(j, "path"), d.path, "path"), take(sj::string_field(j, "resolved"), d.resolved, "resolved"),
                   take(sj::string_field(j, "kind"), kind, "kind"), take(sj::u64_field(j, "size"), d.size, "size"),
                   take(sj::u64_field(j, "major", UINT32_MAX), major, "major"),
                   take(sj::u64_field(j, "minor", UINT32_MAX), minor, "minor"),
                   take(sj::string_field(j, "serial"), d.serial, "serial"), take(sj::string_field(j, "wwid"), d.wwid, "wwid"),
                   take(sj::string_field(j, "backing_file"), d.backing_file, "backing_file"),
                   take(sj::u64_field(j, "inode"), d.inode, "inode"), take(sj::u64_field(j, "fs_dev"), d.fs_dev, "fs_dev")})
    if (!why.empty()) return err(why);
  d.major = static_cast<unsigned>(major);
  d.minor = static_cast<unsigned>(minor);
  d.kind = device_kind(kind);
  if (d.kind == DeviceKind::unknown) return err("\"kind\" is \"" + kind + "\", not block, loop or file");
  if (d.resolved.empty()) return err("\"resolved\" is empty");
  auto by_id = j.find("by_id");
  if (by_id == j.end()) return err("\"by_id\" is missing");
  if (!by_id->is_array() || by_id->size() > kMaxDevices) return err("\"by_id\" is not a list of at most " + std::to_string(kMaxDevices) + " links");
  for (const auto& l : *by_id) {
    json one{{"link", l}};
    std::string link;
    if (auto why = take(sj::string_field(one, "link"), link, "link"); !why.empty()) return err("\"by_id\": " + why);
    d.by_id.push_back(std::move(link));
  }
  return d;
}
}  // namespace

std::string record_text(const CanaryRecord& r) {
  json j{{"name", r.name}, {"signature_id", r.signature_id}, {"pattern_key", r.pattern_key}, {"created", r.created}};
  j["devices"] = json::array();
  for (const auto& d : r.devices) j["devices"].push_back(to_json(d));
  return j.dump(2) + "\n";
}

Result<CanaryRecord> parse_record(std::string_view text, const std::string& name) {
  auto j = sj::parse_object(text);
  if (!j) return err(j.error());
  CanaryRecord r;
  for (auto why : {take(sj::string_field(*j, "name"), r.name, "name"),
                   take(sj::string_field(*j, "signature_id"), r.signature_id, "signature_id"),
                   take(sj::u64_field(*j, "pattern_key"), r.pattern_key, "pattern_key"),
                   take(sj::number_field(*j, "created"), r.created, "created")})
    if (!why.empty()) return err(why);
  if (r.name != name) return err("it belongs to canary \"" + r.name + "\", not \"" + name + "\"");
  if (r.signature_id.empty()) return err("\"signature_id\" is empty");
  auto devices = j->find("devices");
  if (devices == j->end()) return err("\"devices\" is missing");
  if (!devices->is_array() || devices->empty() || devices->size() > kMaxDevices)
    return err("\"devices\" is not a list of 1 to " + std::to_string(kMaxDevices) + " devices");
  for (const auto& d : *devices) {
    auto id = device_from_json(d);
    if (!id) return err("device " + std::to_string(r.devices.size() + 1) + ": " + id.error());
    r.devices.push_back(std::move(*id));
  }
  return r;
}

Result<CanaryRecord> load_record(const fs::path& state_dir, const std::string& name) {
  auto p = canary_state_dir(state_dir, name) / "identity.json";
  auto t = sj::read_state_file(p);
  if (!t) return err("unreadable canary record: " + t.error() + "; re-run canary init");
  if (!*t)
    return err("canary \"" + name + "\" was never initialised (no " + p.string() + "); run: fsauditd canary init " + name +
               " --config FILE");
  auto r = parse_record(**t, name);
  if (!r) return err("corrupt canary record " + p.string() + ": " + r.error() + "; re-run canary init");
  return r;
}

Result<void> save_record(const fs::path& state_dir, const CanaryRecord& r) {
  auto dir = canary_state_dir(state_dir, r.name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return err("cannot create " + dir.string() + ": " + ec.message());
  return write_file_atomic(dir / "identity.json", record_text(r), 0600);
}

std::string signature_text(const std::string& name, const std::string& id) {
  return "fsaudit-canary v1\nname=" + name + "\nid=" + id +
         "\n# This filesystem is an fsaudit corruption canary: fsauditd deliberately corrupts data here.\n";
}

Result<void> check_signature(const std::string& text, const std::string& name, const std::string& id) {
  auto ls = lines(text);
  if (ls.empty() || trim(ls[0]) != "fsaudit-canary v1") return err("not an fsaudit canary signature", ErrorKind::refused);
  std::string n, i;
  for (auto l : ls) {
    if (l.starts_with("name=")) n = std::string(l.substr(5));
    if (l.starts_with("id=")) i = std::string(l.substr(3));
  }
  if (n != name) return err("signature names canary \"" + n + "\", not \"" + name + "\"", ErrorKind::refused);
  if (i != id) return err("signature id " + i + " does not match the id recorded at init (" + id + ")", ErrorKind::refused);
  return {};
}

}  // namespace fsaudit::canary
