#pragma once
// The canary verbs of the helper's request line, parsed without touching the host (see
// helper_protocol.hpp for the whole protocol).
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::canary {

struct HelperRequest {
  std::string verb;
  std::string canary;
};

const std::vector<std::string>& helper_verbs();

// Strict: a JSON object with exactly "verb" (one of helper_verbs()) and "canary" (a string).
Result<HelperRequest> parse_helper_request(std::string_view line);

}  // namespace fsaudit::canary
