#pragma once
// A label found after the series were built: the whole disk under a `device`, without each series'
// builder having to know it.
#include <functional>
#include <string>

#include "daemon/metrics/batch.hpp"

namespace fsaudit::metrics {

// `in` with label `to`, valued derive(value of label `from`), on every own sample that has `from`
// and not `to`; derive() giving "" adds nothing. Parts (Batch::include) are carried over as they are.
Batch with_derived_label(const Batch& in, const std::string& from, const std::string& to,
                         const std::function<std::string(const std::string&)>& derive);

}  // namespace fsaudit::metrics
