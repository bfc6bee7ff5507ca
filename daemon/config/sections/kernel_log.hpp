#pragma once
// Config section 'kernel_log': Kernel log watcher (issue 3).
#include "daemon/config/reader.hpp"

namespace fsaudit::config {

struct KernelLogConfig {};

// `s` is the 'kernel_log' mapping (empty when absent). Reads every key it knows, then s.finish().
KernelLogConfig parse_kernel_log(Section s);

}  // namespace fsaudit::config
