#pragma once
// md's scrub driver: "check" / "idle" written to <sysfs>/block/mdX/md/sync_action.
#include <memory>

#include "probes/scrub_driver/drivers.hpp"

namespace fsaudit::md {

std::unique_ptr<scrub::Driver> make_scrub_driver();

}  // namespace fsaudit::md
