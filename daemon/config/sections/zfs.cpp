#include "daemon/config/sections/zfs.hpp"

namespace fsaudit::config {

ZfsConfig parse_zfs(Section s) {
  ZfsConfig c;
  c.detail = s.choice("detail", c.detail, {"compact", "full"});
  s.finish();
  return c;
}

}  // namespace fsaudit::config
