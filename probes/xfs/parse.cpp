// Pure parser of `xfs_spaceman -c health` (declared in parse.hpp): text in, struct out.
#include "probes/xfs/parse.hpp"

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

}  // namespace fsaudit::xfs
