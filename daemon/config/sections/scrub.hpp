#pragma once
// Config section 'scrub': Scrub scheduling (issue 6).
#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct ScrubConfig {};

// `s` is the 'scrub' mapping (empty when absent). Reads every key it knows, then s.finish().
ScrubConfig parse_scrub(Section s);

}  // namespace fsaudit::config
