#pragma once
// The stream test's "last start" records: one line "EPOCH_SECONDS PATH" per directory.
#include <map>
#include <string>
#include <string_view>

namespace fsaudit::latency {

std::map<std::string, double> parse_stream_state(std::string_view text);
std::string format_stream_state(const std::map<std::string, double>& m);

}  // namespace fsaudit::latency
