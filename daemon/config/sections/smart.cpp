#include "daemon/config/sections/smart.hpp"

namespace fsaudit::config {

SmartConfig parse_smart(Section s) {
  SmartConfig c;
  c.concurrency = s.integer("concurrency", c.concurrency, 1, 16);
  c.call_timeout = s.duration("call_timeout", c.call_timeout, std::chrono::seconds(1), std::chrono::minutes(10));
  s.finish();
  return c;
}

}  // namespace fsaudit::config
