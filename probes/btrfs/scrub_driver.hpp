#pragma once
// btrfs's scrub driver: `btrfs scrub start -B` (detached), `scrub cancel` (which keeps the position,
// so it is also the pause), `scrub resume`; observed through `btrfs scrub status -d -R` as parsed
// by scrub_status.hpp, or /var/lib/btrfs/scrub.status.<fsid> when the command fails.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "probes/btrfs/scrub_status.hpp"
#include "probes/scrub_driver/drivers.hpp"

namespace fsaudit::btrfs {

// The one way to start a scrub of the filesystem mounted at `mountpoint`: in the foreground (-B),
// raw counters (-R). The scrub probe runs it detached, the canary waits for it.
std::vector<std::string> scrub_start_argv(const std::string& btrfs, const std::string& mountpoint);

// Pure mappings from the parser's results to an Observation (tested on the real fixtures).
// `device_name` turns a printed device path into the kernel name (identity when empty).
scrub::Observation observation_from_btrfs(const ScrubStatus& status,
                                          const std::function<std::string(const std::string&)>& device_name = {});
scrub::Observation observation_from_btrfs_file(const ScrubFile& f, const std::string& fsid);

std::unique_ptr<scrub::Driver> make_scrub_driver();

}  // namespace fsaudit::btrfs
