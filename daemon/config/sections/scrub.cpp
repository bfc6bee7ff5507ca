#include "daemon/config/sections/scrub.hpp"

namespace fsaudit::config {

ScrubConfig parse_scrub(Section s) {
  s.finish();
  return {};
}

}  // namespace fsaudit::config
