// Pure parser of `xfs_spaceman -c health` (declared in parse.hpp): text in, struct out.
#include "probes/xfs/parse.hpp"

#include <cstring>

#include "daemon/core/strings.hpp"

namespace fsaudit::xfs {

std::size_t Health::unhealthy() const {
  std::size_t n = 0;
  for (const auto& i : items)
    if (!i.healthy) ++n;
  return n;
}

Result<Health> parse_spaceman_health(std::string_view text) {
  Health h;
  bool not_collected = false;
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    if (line.empty()) continue;
    if (line.starts_with("Health status has not been collected")) {
      not_collected = true;
      continue;
    }
    if (line.starts_with("Please run xfs_scrub")) continue;
    auto colon = line.rfind(": ");
    if (colon == std::string_view::npos) continue;
    auto verdict = trim(line.substr(colon + 2));
    if (verdict != "ok" && verdict != "unhealthy") continue;
    auto what = line.substr(0, colon);
    HealthItem item;
    item.healthy = verdict == "ok";
    auto ws = split_ws(what);
    if (what.starts_with("filesystem ")) {
      item.scope = "filesystem";
      item.metadata = std::string(trim(what.substr(11)));
    } else if (ws.size() >= 3 && (ws[0] == "AG" || ws[0] == "rtgroup" || ws[0] == "inode") && parse_u64(ws[1])) {
      item.scope = ws[0] == "AG" ? "ag" : std::string(ws[0]);
      item.index = std::string(ws[1]);
      auto start = what.find(ws[1]) + ws[1].size();
      item.metadata = std::string(trim(what.substr(start)));
    } else {
      // A file argument: "<path> <metadata>"; the metadata names are fixed phrases, so match them.
      static const char* const inode_meta[] = {"inode core", "data fork", "extended attribute fork",
                                               "copy on write fork", "directory tree structure", "directory",
                                               "extended attributes", "symbolic link target", "parent pointers",
                                               "file data"};
      item.scope = "path";
      for (const auto* m : inode_meta) {
        std::string_view mv(m);
        if (what.size() > mv.size() && what.ends_with(mv) && what[what.size() - mv.size() - 1] == ' ') {
          item.metadata = m;
          item.index = std::string(what.substr(0, what.size() - mv.size() - 1));
          break;
        }
      }
      if (item.metadata.empty()) item.metadata = std::string(what);
    }
    h.items.push_back(std::move(item));
  }
  h.collected = !h.items.empty();
  if (!h.collected && !not_collected) {
    auto ls = lines(text);
    return err("xfs_spaceman health output not recognised" +
               (ls.empty() ? std::string(" (empty)") : ": '" + std::string(trim(ls.front())) + "'"));
  }
  return h;
}

namespace {

constexpr std::uint32_t kFlagFinobt = 1u << 17, kFlagRmapbt = 1u << 19, kFlagReflink = 1u << 20;

struct FlagName {
  std::uint32_t mask;
  const char* what;
  std::uint32_t needs_flag = 0;  // listed only when the filesystem has this feature
  bool needs_rt = false;
};
constexpr FlagName kFsFlags[] = {
    {1u << 0, "summary counters"},         {1u << 1, "user quota"},
    {1u << 2, "group quota"},              {1u << 3, "project quota"},
    {1u << 4, "realtime bitmap", 0, true}, {1u << 5, "realtime summary", 0, true},
};
constexpr FlagName kAgFlags[] = {
    {1u << 0, "superblock"},
    {1u << 1, "AGF header"},
    {1u << 2, "AGFL header"},
    {1u << 3, "AGI header"},
    {1u << 4, "free space by block btree"},
    {1u << 5, "free space by length btree"},
    {1u << 6, "inode btree"},
    {1u << 7, "free inode btree", kFlagFinobt},
    {1u << 8, "reverse mappings btree", kFlagRmapbt},
    {1u << 9, "reference count btree", kFlagReflink},
    {1u << 10, "overall inode state"},
};

// As spaceman's report: a structure is listed once it was checked or found sick.
template <std::size_t N>
void report(Health& h, const Geometry& g, const char* scope, const std::string& index, const FlagName (&names)[N],
            std::uint32_t sick, std::uint32_t checked) {
  for (const auto& f : names) {
    if (f.needs_flag && !(g.flags & f.needs_flag)) continue;
    if (f.needs_rt && g.rtblocks == 0) continue;
    const bool bad = sick & f.mask;
    if (!bad && !(checked & f.mask)) continue;
    h.items.push_back({scope, index, f.what, !bad});
  }
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
bool get(std::string_view& in, T& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}

}  // namespace

Health health_from_geometry(const Geometry& g) {
  Health h;
  report(h, g, "filesystem", "", kFsFlags, g.sick, g.checked);
  for (std::size_t i = 0; i < g.ags.size(); ++i) report(h, g, "ag", std::to_string(i), kAgFlags, g.ags[i].sick, g.ags[i].checked);
  h.collected = !h.items.empty();
  return h;
}

std::string encode_geometry(const Geometry& g) {
  std::string out;
  put(out, g.flags);
  put(out, g.sick);
  put(out, g.checked);
  put(out, static_cast<std::uint32_t>(g.ags.size()));
  put(out, g.rtblocks);
  for (const auto& a : g.ags) {
    put(out, a.sick);
    put(out, a.checked);
  }
  return out;
}

std::optional<Geometry> decode_geometry(std::string_view in) {
  Geometry g;
  std::uint32_t n = 0;
  if (!get(in, g.flags) || !get(in, g.sick) || !get(in, g.checked) || !get(in, n) || !get(in, g.rtblocks) ||
      in.size() != static_cast<std::size_t>(n) * 8)
    return std::nullopt;
  g.ags.resize(n);
  for (auto& a : g.ags)
    if (!get(in, a.sick) || !get(in, a.checked)) return std::nullopt;
  return g;
}

}  // namespace fsaudit::xfs
