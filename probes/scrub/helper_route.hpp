#pragma once
// Scrub actions through fsaudit-helper (docs/security.md). An fsauditd that is not root and names a
// helper socket (`canary.helper`) starts, pauses, resumes and cancels scrubs with the helper's
// scrub verbs instead of running the tools itself; it still observes them itself (the btrfs status
// ioctl through the helper's btrfs-scrub-status), reading the detached jobs the helper starts from
// the helper's job directory, which it may read and not write. Whatever path acts, the probe's
// state and metrics are the same.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "daemon/core/result.hpp"
#include "probes/scrub_driver/drivers.hpp"
#include "probes/scrub/helper_answer.hpp"

namespace fsaudit::scrub {

// One request line to the helper and its answer line (helper_exchange; tests: a fake).
using HelperTransport = std::function<Result<std::string>(const std::string& request, std::chrono::milliseconds timeout)>;
HelperTransport socket_transport(const std::string& socket_path);

// The rule: through the helper exactly when one is configured and this process is not root. As
// root fsauditd acts itself (fsauditd-root.service), helper or not.
bool actions_via_helper(const std::string& helper_socket, uid_t euid);

// `inner` observes; its actions go through the helper.
std::unique_ptr<Driver> route_through_helper(std::unique_ptr<Driver> inner, HelperTransport transport);

}  // namespace fsaudit::scrub
