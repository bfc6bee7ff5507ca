#pragma once
// Config section 'canary': Canaries and lab mode (issue 4).
#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct CanaryConfig {};

// `s` is the 'canary' mapping (empty when absent). Reads every key it knows, then s.finish().
CanaryConfig parse_canary(Section s);

}  // namespace fsaudit::config
