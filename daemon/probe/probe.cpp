#include "daemon/probe/probe.hpp"

#include <algorithm>

namespace fsaudit {
std::chrono::milliseconds ProbeContext::remaining() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.now());
  return std::max(left, std::chrono::milliseconds(1));
}
}  // namespace fsaudit
