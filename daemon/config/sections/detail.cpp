#include "daemon/config/sections/detail.hpp"

namespace fsaudit::config {

DetailConfig parse_detail(Section s) {
  DetailConfig c;
  c.detail = s.choice("detail", c.detail, {"compact", "full"});
  s.finish();
  return c;
}

}  // namespace fsaudit::config
