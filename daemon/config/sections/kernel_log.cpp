#include "daemon/config/sections/kernel_log.hpp"

namespace fsaudit::config {

KernelLogConfig parse_kernel_log(Section s) {
  s.finish();
  return {};
}

}  // namespace fsaudit::config
