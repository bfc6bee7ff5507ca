#pragma once
// XFS's scrub driver: xfs_scrub -b, run detached; its output (scrub_output.hpp) and exit bits are the result.
#include <memory>

#include "probes/scrub_driver/drivers.hpp"

namespace fsaudit::xfs {

std::unique_ptr<scrub::Driver> make_scrub_driver();

}  // namespace fsaudit::xfs
