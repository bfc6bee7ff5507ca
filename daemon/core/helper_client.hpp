#pragma once
// The unprivileged side of fsaudit-helper (docs/security.md): one request line out, one answer line
// back, over the helper's unix socket. Probes use it when the host refuses them (EPERM/EACCES) and
// a helper socket is configured; what the helper may do is decided by the helper's own config.
#include <chrono>
#include <map>
#include <string>

#include "daemon/core/result.hpp"

namespace fsaudit {

// Sends `request` (one JSON object, no newline) and returns the answer line (without "\n").
Result<std::string> helper_exchange(const std::string& socket_path, const std::string& request,
                                    std::chrono::milliseconds timeout);

// {"verb": verb, <args>} (string arguments); the answer's "result" object with its members as text
// (strings as they are, anything else as JSON) when the helper did it, else why not.
Result<std::map<std::string, std::string>> helper_call(const std::string& socket_path, const std::string& verb,
                                                       const std::map<std::string, std::string>& args,
                                                       std::chrono::milliseconds timeout);

}  // namespace fsaudit
