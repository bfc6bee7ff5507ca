#include "probes/zfs/stack.hpp"

#include <algorithm>
#include <set>

#include "daemon/core/strings.hpp"

namespace fsaudit::zfs {

namespace {

// Parity level of a raidz/draid type ("raidz" alone is raidz1, as zpool of pool version < 26 prints it;
// "draid2:4d:12c:1s" is draid2).
std::optional<int> parity_of(std::string_view type) {
  for (std::string_view p : {"raidz", "draid"}) {
    if (!type.starts_with(p)) continue;
    auto rest = type.substr(p.size());
    if (rest.empty() || rest[0] == ':') return 1;
    if (rest[0] >= '1' && rest[0] <= '3') return rest[0] - '0';
    return std::nullopt;
  }
  return std::nullopt;
}

std::string layout_word(const ZfsVdev& top) {
  if (top.leaf) return "single";
  if (top.type.starts_with("mirror")) return "mirror";
  if (auto p = parity_of(top.type)) return (top.type.starts_with("raidz") ? "raidz" : "draid") + std::to_string(*p);
  return top.type;
}

// A member that holds no good copy now. Spares waiting (AVAIL) are not members.
bool bad_state(const std::string& s) { return !state_is_healthy(s); }

struct TopVdev {
  const ZfsVdev* vdev = nullptr;
  int children = 0, bad_children = 0;
};

}  // namespace

stack::StackModel stack_model(const ZfsPoolStatus& pool, DatasetShape ds) {
  stack::StackModel m;
  m.fs = "zfs";
  m.name = pool.name;
  m.data_checksums = ds.checksum;
  const auto copies = static_cast<std::uint64_t>(std::max(ds.copies, 1));

  // Top-level vdevs with their direct children, by the tree's print order (names may repeat).
  std::vector<TopVdev> tops;
  for (const auto& v : pool.vdevs) {
    if (v.depth == 0) {
      tops.push_back({&v, 0, 0});
      continue;
    }
    if (v.depth == 1 && !tops.empty()) {
      ++tops.back().children;
      if (bad_state(v.state)) ++tops.back().bad_children;
    }
    if (v.leaf && bad_state(v.state) && v.role != "spare" && v.role != "cache" && v.role != "log")
      m.bad_members.push_back({v.name, v.state.empty() ? "state unknown" : v.state});
  }

  std::set<std::string> words;
  std::set<std::uint64_t> data_copies;
  std::optional<int> designed, margin, spare, parity;
  bool all_parity = true, repairs = true;
  auto lower = [](std::optional<int>& acc, int v) { acc = acc ? std::min(*acc, v) : v; };
  for (const auto& t : tops) {
    const auto& v = *t.vdev;
    if (v.role != "data" && v.role != "special" && v.role != "dedup") continue;
    int survives = 0, now = 0, spare_now = 0;
    std::uint64_t block_copies = copies;
    if (v.leaf) {
      now = 0;
      spare_now = bad_state(v.state) ? -1 : static_cast<int>(copies) - 1;
      all_parity = false;
    } else if (v.type.starts_with("mirror")) {
      survives = std::max(t.children - 1, 0);
      int good = t.children - t.bad_children;
      now = good - 1;
      spare_now = good * static_cast<int>(copies) - 1;
      block_copies = static_cast<std::uint64_t>(t.children) * copies;
      all_parity = false;
    } else if (auto p = parity_of(v.type)) {
      survives = *p;
      now = *p - t.bad_children;
      spare_now = now + static_cast<int>(copies) - 1;
      if (v.role == "data") lower(parity, *p);
    } else {
      // A type this code does not know: say so rather than guess.
      m.health = stack::Health::unknown;
      m.reason = "pool " + pool.name + " has a top-level vdev " + v.name + " of unknown type " + v.type;
      return m;
    }
    lower(designed, survives);
    lower(margin, std::max(now, 0));
    if (v.role == "data") {
      // Whole, this vdev has another copy (mirror, ditto copies) or parity for each block.
      repairs = repairs && (block_copies > 1 || parity_of(v.type).has_value());
      words.insert(layout_word(v));
      data_copies.insert(block_copies);
      lower(spare, std::max(spare_now, 0));
    }
  }
  for (const auto& w : words) m.layout += (m.layout.empty() ? "" : "+") + w;
  // A block lands on one of the data vdevs: only a pool whose data vdevs agree has one number.
  if (data_copies.size() == 1) m.copies = *data_copies.begin();
  m.repairs = repairs && !words.empty();
  if (all_parity && parity) m.parity = static_cast<std::uint64_t>(*parity);
  m.designed_redundancy = designed;
  m.margin = margin;
  m.spare_copies = spare;

  std::string bad;
  for (const auto& b : m.bad_members) bad += (bad.empty() ? "" : ", ") + b.text();
  if (!pool.complete) {
    m.health = stack::Health::unknown;
    m.reason = "zpool status of pool " + pool.name + " was cut short (no errors: line): its members are not all known";
  } else if (words.empty()) {
    m.health = stack::Health::unknown;
    m.reason = "zpool status of pool " + pool.name + " lists no data vdevs" +
               (pool.state.empty() ? "" : " (state " + pool.state + ")");
  } else if (pool.scan.function == ScanFunction::resilver && pool.scan.state == ScanState::in_progress) {
    m.health = stack::Health::resilvering;
    m.reason = "pool " + pool.name + " is " + (pool.state.empty() ? "resilvering" : pool.state + " and resilvering") +
               (bad.empty() ? "" : " (" + bad + ")") + ": " + std::string(trim(pool.scan.text));
  } else if (!state_is_healthy(pool.state) || !bad.empty()) {
    m.health = stack::Health::degraded;
    m.reason = "pool " + pool.name + " is " + (pool.state.empty() ? "not ONLINE" : pool.state) +
               (bad.empty() ? "" : ": " + bad);
  } else {
    m.health = stack::Health::ok;
  }
  return m;
}

Result<DatasetShape> dataset_shape(const PropertyTable& t, const std::string& dataset) {
  auto ds = t.find(dataset);
  if (ds == t.end()) return err("zfs get: no properties of " + dataset + " in the output");
  auto get = [&](const char* k) -> std::string {
    auto it = ds->second.find(k);
    return it == ds->second.end() ? "" : it->second;
  };
  DatasetShape out;
  auto c = parse_u64(get("copies"));
  if (!c || *c < 1 || *c > 3) return err("zfs get: copies of " + dataset + " is not 1, 2 or 3: '" + get("copies") + "'");
  out.copies = static_cast<int>(*c);
  std::string sum = to_lower(get("checksum"));
  if (sum.empty() || sum == "-") return err("zfs get: no checksum property of " + dataset);
  out.checksum = sum != "off";
  return out;
}

}  // namespace fsaudit::zfs
