#pragma once
// The status items a key last published, as the store keeps them: one compact string instead of the
// structs (issue 33). Most items say two or three things about one target (its size and free space,
// whether it is mounted), yet an FsFacts is 400 bytes of mostly empty optionals and strings, and a
// target has an item from each of its probes: 10,000 targets held about 30 MB of them. Packed, an item
// costs the values it has; its target's name is its key's. The page, the API and the capacity trend unpack them
// when they read them.
#include <string>
#include <string_view>

#include "daemon/metrics/status_items.hpp"

namespace fsaudit::metrics {

// `known`: a text many of the items' strings are (the target their key names), kept once, outside.
std::string pack(const StatusItems& items, std::string_view known = {});
// The items `pack` was given, with the same `known`. Text that `pack` did not make (cut short, or from
// another build) gives what could be read up to there; it never reads past the end.
StatusItems unpack(std::string_view packed, std::string_view known = {});

}  // namespace fsaudit::metrics
