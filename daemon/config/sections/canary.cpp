#include "daemon/config/sections/canary.hpp"

namespace fsaudit::config {

CanaryConfig parse_canary(Section s) {
  s.finish();
  return {};
}

}  // namespace fsaudit::config
