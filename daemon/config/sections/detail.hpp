#pragma once
// A probe section whose one key is `detail: compact | full`: what the probe exports beyond health
// (issue 33's series budget). compact is the default; full adds the probe's diagnostic series.
#include <string>

#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct DetailConfig {
  std::string detail = "compact";  // compact | full
  bool full() const { return detail == "full"; }
};

// `s` is the section's mapping (empty when absent). Reads `detail`, then s.finish().
DetailConfig parse_detail(Section s);

}  // namespace fsaudit::config
