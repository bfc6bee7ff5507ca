#pragma once
// The one place that knows every probe type. Each probe folder exposes a factory; this file calls it.
#include <memory>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"

namespace fsaudit::app {

std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg);

}  // namespace fsaudit::app
