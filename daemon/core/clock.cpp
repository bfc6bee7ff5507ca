#include "daemon/core/clock.hpp"

namespace fsaudit {
const SystemClock& SystemClock::instance() {
  static SystemClock c;
  return c;
}
}  // namespace fsaudit
