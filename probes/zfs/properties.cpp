#include "probes/zfs/properties.hpp"

#include <vector>

#include "daemon/core/strings.hpp"

namespace fsaudit::zfs {

Result<PropertyTable> parse_property_table(std::string_view text) {
  PropertyTable t;
  bool header_seen = false;
  std::size_t rows = 0;
  for (auto raw : lines(text)) {
    if (trim(raw).empty()) continue;
    std::vector<std::string_view> f;
    if (raw.find('\t') != std::string_view::npos) {
      f = split(raw, '\t');
    } else {
      f = split_ws(raw);
      // The plain form: the header first, then whitespace-separated columns; a value never holds a
      // blank in the properties fsaudit reads (ashift, autotrim, capacity, ...).
      if (!header_seen) {
        if (f.size() >= 3 && f[0] == "NAME" && f[1] == "PROPERTY" && f[2] == "VALUE") {
          header_seen = true;
          continue;
        }
        return err("not a zfs/zpool get table (no tabs, no NAME PROPERTY VALUE header): \"" +
                   std::string(trim(raw).substr(0, 80)) + "\"");
      }
      if (f.size() > 4) {  // a value with blanks: everything between property and source
        std::string v;
        for (std::size_t i = 2; i + 1 < f.size(); ++i) v += (v.empty() ? "" : " ") + std::string(f[i]);
        t[std::string(f[0])][std::string(f[1])] = v;
        ++rows;
        continue;
      }
    }
    if (f.size() < 3) return err("zfs/zpool get row with " + std::to_string(f.size()) + " fields: \"" +
                                 std::string(trim(raw).substr(0, 80)) + "\"");
    t[std::string(f[0])][std::string(f[1])] = std::string(f[2]);
    ++rows;
  }
  if (rows == 0) return err("empty zfs/zpool get output");
  return t;
}

}  // namespace fsaudit::zfs
