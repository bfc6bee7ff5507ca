#pragma once
// bcachefs's scrub driver: `bcachefs scrub` (tools >= 1.33; `data scrub` before), run detached.
#include <memory>

#include "probes/scrub_driver/drivers.hpp"

namespace fsaudit::bcachefs {

std::unique_ptr<scrub::Driver> make_scrub_driver();

}  // namespace fsaudit::bcachefs
