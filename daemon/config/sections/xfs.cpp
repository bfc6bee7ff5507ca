#include "daemon/config/sections/xfs.hpp"

namespace fsaudit::config {

XfsConfig parse_xfs(Section s) {
  XfsConfig c;
  c.detail = s.choice("detail", c.detail, {"compact", "full"});
  s.finish();
  return c;
}

}  // namespace fsaudit::config
