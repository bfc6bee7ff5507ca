#pragma once
// `zfs get` / `zpool get` property tables. Pure.
#include <map>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit::zfs {

// name -> property -> value, from `zfs get -Hp ...` / `zpool get -Hp all POOL` (tab separated, no
// header) or the plain form with a "NAME PROPERTY VALUE SOURCE" header (zfs-fuse's zpool get). A
// value "-" is kept as "-". Text that is neither is an error.
using PropertyTable = std::map<std::string, std::map<std::string, std::string>>;
Result<PropertyTable> parse_property_table(std::string_view text);

}  // namespace fsaudit::zfs
