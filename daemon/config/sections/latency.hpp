#pragma once
// Config section 'latency': fsync latency sampler (issue 5).
#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct LatencyConfig {};

// `s` is the 'latency' mapping (empty when absent). Reads every key it knows, then s.finish().
LatencyConfig parse_latency(Section s);

}  // namespace fsaudit::config
