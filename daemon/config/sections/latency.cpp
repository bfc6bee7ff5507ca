#include "daemon/config/sections/latency.hpp"

namespace fsaudit::config {

LatencyConfig parse_latency(Section s) {
  s.finish();
  return {};
}

}  // namespace fsaudit::config
