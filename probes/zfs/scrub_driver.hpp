#pragma once
// ZFS's scrub driver: `zpool scrub [-p|-s] POOL`, observed through `zpool status POOL` as parsed by
// status.hpp (the one reading of its scan block).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "probes/scrub_driver/drivers.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

// The one way to start a scrub of `pool` (the scrub probe and the canary both use it).
std::vector<std::string> scrub_start_argv(const std::string& zpool, const std::string& pool);

// Pure: what `zpool status POOL` says about the (first) pool's scrub; an error when the text is not
// zpool status output.
Result<scrub::Observation> observation_from_zpool_status(std::string_view text);
// Pure: the same for one pool of a parsed `zpool status` (of one pool or of all).
scrub::Observation observation_from_pool(const ZfsPoolStatus& pool);

std::unique_ptr<scrub::Driver> make_scrub_driver();

}  // namespace fsaudit::zfs
