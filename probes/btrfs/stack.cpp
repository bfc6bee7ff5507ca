#include "probes/btrfs/stack.hpp"

#include <algorithm>
#include <set>

#include "daemon/core/strings.hpp"

namespace fsaudit::btrfs {

std::optional<ProfileShape> profile_shape(std::string_view profile) {
  auto p = to_lower(profile);
  if (p == "single" || p == "raid0") return ProfileShape{1, 0, 0};
  if (p == "dup") return ProfileShape{2, 0, 0};
  if (p == "raid1" || p == "raid10") return ProfileShape{2, 0, 1};
  if (p == "raid1c3") return ProfileShape{3, 0, 2};
  if (p == "raid1c4") return ProfileShape{4, 0, 3};
  if (p == "raid5") return ProfileShape{1, 1, 1};
  if (p == "raid6") return ProfileShape{1, 2, 2};
  return std::nullopt;
}

bool profile_is_redundant(std::string_view profile) {
  auto s = profile_shape(profile);
  return s && (s->copies > 1 || s->parity > 0);
}

stack::StackModel stack_model(const SysfsFilesystem& f, bool data_checksums) {
  stack::StackModel m;
  m.fs = "btrfs";
  m.name = f.fsid;
  m.data_checksums = data_checksums;
  int missing = 0;
  for (const auto& d : f.devices)
    if (d.missing) {
      ++missing;
      m.bad_members.push_back({d.name.empty() ? "devid " + std::to_string(d.devid) : d.name, "missing"});
    }

  // Profile directories stay after a balance emptied them: only those holding chunks count.
  std::set<std::string> data_words;
  std::optional<ProfileShape> data;
  std::optional<int> survives, spare;
  bool unknown_profile = false, repairs = true;
  for (const auto& p : f.profiles) {
    if (p.total_bytes == 0 && p.used_bytes == 0) continue;
    auto s = profile_shape(p.profile);
    if (!s) {
      unknown_profile = true;
      continue;
    }
    survives = survives ? std::min(*survives, s->survives) : s->survives;
    if (p.type != "data") continue;
    data_words.insert(to_lower(p.profile));
    data = s;
    repairs = repairs && (s->copies > 1 || s->parity > 0);
    // Each missing member takes one spare copy (or parity) away; dup keeps both copies on one
    // device, so a missing device may take both. A block sits in any of the data profiles.
    int spare_now = missing > 0 ? std::max(s->survives - missing, 0) : s->copies - 1 + s->parity;
    spare = spare ? std::min(*spare, spare_now) : spare_now;
  }
  m.repairs = repairs && !unknown_profile && !data_words.empty();
  for (const auto& w : data_words) m.layout += (m.layout.empty() ? "" : "+") + w;
  // While a balance converts, a block sits in either profile: no one number of copies.
  if (data_words.size() == 1 && !unknown_profile) {
    m.copies = static_cast<std::uint64_t>(data->copies);
    m.parity = static_cast<std::uint64_t>(data->parity);
  }
  if (!unknown_profile && survives) {
    m.designed_redundancy = *survives;
    m.margin = std::max(*survives - missing, 0);
  }
  if (!unknown_profile) m.spare_copies = spare;

  std::string bad;
  for (const auto& b : m.bad_members) bad += (bad.empty() ? "" : ", ") + b.text();
  if (missing > 0) {
    m.health = stack::Health::missing_members;
    m.reason = "btrfs " + f.fsid + " is missing " + std::to_string(missing) + " of " + std::to_string(f.devices.size()) +
               " members (" + bad + ")";
  } else if (f.devices.empty() || data_words.empty()) {
    m.health = stack::Health::unknown;
    m.reason = "btrfs " + f.fsid + ": " + (f.devices.empty() ? "no members" : "no data block groups") + " in sysfs";
  } else if (unknown_profile) {
    m.health = stack::Health::unknown;
    m.reason = "btrfs " + f.fsid + " has a block-group profile this fsaudit does not know";
  } else {
    m.health = stack::Health::ok;
  }
  return m;
}

}  // namespace fsaudit::btrfs
